//go:build integration

package engine

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/xrun-dev/xrun/internal/testenv"
)

// testLabel=testValue marks everything these tests make, so they clean up
// after themselves, and only after themselves: other packages' suites
// (client/e2e) use the same label with their own value, and may be building
// on the same daemon at the same time.
const (
	testLabel = "dev.xrun.test"
	testValue = "engine"
)

// connectLocal reaches the daemon the environment names (DOCKER_HOST, else
// the local socket), as the docker CLI does without a context.
func connectLocal(ctx context.Context) (*Docker, error) {
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		return nil, err
	}
	return FromClient(cli.DaemonHost(), cli), nil
}

// daemon connects to the local daemon; without one the test is skipped,
// except under CI=true where it fails.
func daemon(t *testing.T) *Docker {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no Docker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := connectLocal(ctx)
	if err != nil {
		testenv.Missing(t, "no Docker daemon: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// busyboxImage builds a scratch image holding a static busybox.
func busyboxImage(t *testing.T, d *Docker) string {
	t.Helper()
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		testenv.Missing(t, "no static busybox (apt-get install busybox-static): %v", err)
	}
	tag := "xrun-test/engine-busybox:latest"
	df := "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n"
	ctx := context.Background()
	id, err := d.Build(ctx, tarOf(t, map[string][]byte{"Dockerfile": []byte(df), "busybox": bb}),
		BuildOptions{Tag: tag, Labels: map[string]string{testLabel: testValue}}, nil)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	if !strings.HasPrefix(id, "sha256:") {
		t.Errorf("image id %q", id)
	}
	return tag
}

func tarOf(t *testing.T, files map[string][]byte) io.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		mode := int64(0o644)
		if name == "busybox" {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(data)
	}
	tw.Close()
	return &buf
}

func run(t *testing.T, d *Docker, s ContainerSpec) (string, WaitResult) {
	t.Helper()
	ctx := context.Background()
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[testLabel] = testValue
	id, err := d.Create(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Remove(context.Background(), id, true) })
	wait := d.Wait(ctx, id, true)
	if err := d.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-wait:
		return id, r
	case <-time.After(60 * time.Second):
		t.Fatal("container did not exit in 60 s")
	}
	return id, WaitResult{}
}

func TestDockerContainerLifecycle(t *testing.T) {
	d := daemon(t)
	ctx := context.Background()
	info, err := d.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.OS != "linux" || info.Arch == "" || info.APIVersion == "" {
		t.Errorf("info = %+v", info)
	}
	img := busyboxImage(t, d)
	if ok, err := d.ImageExists(ctx, img); err != nil || !ok {
		t.Fatalf("ImageExists(%s) = %v, %v", img, ok, err)
	}
	if ok, err := d.ImageExists(ctx, "xrun-test/never-built:nope"); err != nil || ok {
		t.Fatalf("ImageExists(missing) = %v, %v", ok, err)
	}
	id, res := run(t, d, ContainerSpec{
		Name:   "xrun-engine-test-" + time.Now().Format("150405.000000"),
		Image:  img,
		Cmd:    []string{"sh", "-c", `mkdir -p /xrun/out && echo '{"ok":1}' > /xrun/out/r.json && echo to-stdout && echo to-stderr >&2 && exit 3`},
		Env:    []string{"A=1"},
		Labels: map[string]string{"dev.xrun.job": "enginetest"},
	})
	if res.Err != nil || res.ExitCode != 3 {
		t.Fatalf("wait = %+v, want exit 3", res)
	}
	var out, errb bytes.Buffer
	if err := d.Logs(ctx, id, LogOptions{}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if out.String() != "to-stdout\n" || errb.String() != "to-stderr\n" {
		t.Errorf("logs: stdout %q stderr %q", out.String(), errb.String())
	}
	rc, err := d.CopyFrom(ctx, id, "/xrun/out")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		data, _ := io.ReadAll(tr)
		names[h.Name] = string(data)
	}
	rc.Close()
	if names["out/r.json"] != "{\"ok\":1}\n" {
		t.Errorf("copied %v", names)
	}
	c, err := d.Inspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if c.State != "exited" || c.ExitCode != 3 || c.Labels["dev.xrun.job"] != "enginetest" || c.Image != img || c.StartedAt.IsZero() || c.FinishedAt.IsZero() {
		t.Errorf("inspect = %+v", c)
	}
	list, err := d.List(ctx, map[string]string{"dev.xrun.job": "enginetest"}, true)
	// The listing carries the exit code too: ps shows other stores' jobs
	// from it.
	if err != nil || len(list) != 1 || list[0].ID != id || list[0].ExitCode != 3 {
		t.Errorf("List = %+v, %v (want exit code 3)", list, err)
	}
	if err := d.Remove(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Inspect(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("inspect after remove: %v, want ErrNotFound", err)
	}
	if _, err := d.CopyFrom(ctx, id, "/xrun/out"); !errors.Is(err, ErrNotFound) {
		t.Errorf("copy after remove: %v, want ErrNotFound", err)
	}
}

func TestDockerBuildFailureNamesTheStep(t *testing.T) {
	d := daemon(t)
	img := busyboxImage(t, d)
	df := "FROM " + img + "\nRUN echo fetching things\nRUN echo last-words-before && exit 7\nRUN echo never\n"
	_, err := d.Build(context.Background(), tarOf(t, map[string][]byte{"Dockerfile": []byte(df)}),
		BuildOptions{Tag: "xrun-test/engine-fail:latest", Labels: map[string]string{testLabel: testValue}}, nil)
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("err = %v, want a BuildError", err)
	}
	if !strings.Contains(be.Step, "RUN echo last-words-before && exit 7") {
		t.Errorf("step = %q", be.Step)
	}
	if !strings.Contains(strings.Join(be.Last, "\n"), "last-words-before") || !strings.Contains(be.Message, "7") {
		t.Errorf("error = %v", be)
	}
}

func TestDockerOOMAndStop(t *testing.T) {
	d := daemon(t)
	img := busyboxImage(t, d)
	ctx := context.Background()
	id, res := run(t, d, ContainerSpec{Image: img, MemoryBytes: 16 << 20,
		Cmd: []string{"dd", "if=/dev/zero", "of=/dev/null", "bs=256M", "count=1"}})
	c, err := d.Inspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !c.OOMKilled || res.ExitCode != 137 || c.MemoryBytes != 16<<20 {
		t.Errorf("OOM container: exit %d, state %+v", res.ExitCode, c)
	}

	// A running container stops within the grace period.
	id2, err := d.Create(ctx, ContainerSpec{Image: img, Cmd: []string{"sleep", "300"}, Labels: map[string]string{testLabel: testValue}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Remove(context.Background(), id2, true) })
	if err := d.Start(ctx, id2); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := d.Stop(ctx, id2, time.Second); err != nil {
		t.Fatal(err)
	}
	if r := <-d.Wait(ctx, id2, false); r.ExitCode != 137 && r.ExitCode != 143 {
		t.Errorf("stopped container exit %d", r.ExitCode)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("stop took %v", time.Since(start))
	}
}

func TestDockerGPURequestWithoutRuntime(t *testing.T) {
	d := daemon(t)
	ctx := context.Background()
	info, err := d.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testenv.NoNVIDIARuntime(t, info.NvidiaRuntime)
	img := busyboxImage(t, d)
	id, err := d.Create(ctx, ContainerSpec{Image: img, Cmd: []string{"true"}, GPUs: &GPURequest{Count: 1}, Labels: map[string]string{testLabel: testValue}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Remove(context.Background(), id, true) })
	err = d.Start(ctx, id)
	if !errors.Is(err, ErrNoGPURuntime) {
		t.Fatalf("start = %v, want ErrNoGPURuntime", err)
	}
}

func TestUnreachableDaemonIsOneSentence(t *testing.T) {
	cli, err := client.New(client.WithHost("unix:///nonexistent/docker.sock"))
	if err != nil {
		t.Fatal(err)
	}
	d := FromClient("unix:///nonexistent/docker.sock", cli)
	defer d.Close()
	err = d.Ping(context.Background())
	var ue *UnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v, want UnreachableError", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "unix:///nonexistent/docker.sock") || strings.Contains(msg, "\n") {
		t.Errorf("message %q", msg)
	}
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if !testing.Short() {
		cleanupTestObjects()
	}
	os.Exit(code)
}

// cleanupTestObjects removes every container and image the tests made.
func cleanupTestObjects() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := connectLocal(ctx)
	if err != nil {
		return
	}
	defer d.Close()
	cs, _ := d.List(ctx, map[string]string{testLabel: testValue}, true)
	for _, c := range cs {
		d.Remove(ctx, c.ID, true)
	}
	// Intermediate images of a failed build inherit the label too; remove
	// children before parents by retrying.
	for range 3 {
		ims, _ := d.Images(ctx, map[string]string{testLabel: testValue})
		for _, im := range ims {
			d.RemoveImage(ctx, im.ID)
		}
	}
}

// CapAdd reaches the container's process: SYS_ADMIN (bit 21) is in the
// effective set with it and not without it.
func TestDockerCapAdd(t *testing.T) {
	d := daemon(t)
	ctx := context.Background()
	img := busyboxImage(t, d)
	for _, add := range [][]string{nil, {"SYS_ADMIN"}} {
		id, res := run(t, d, ContainerSpec{
			Name:   "xrun-engine-cap-" + time.Now().Format("150405.000000"),
			Image:  img,
			Cmd:    []string{"sh", "-c", `grep CapEff /proc/self/status`},
			CapAdd: add,
		})
		if res.Err != nil || res.ExitCode != 0 {
			t.Fatalf("CapAdd %v: wait = %+v", add, res)
		}
		var out bytes.Buffer
		if err := d.Logs(ctx, id, LogOptions{}, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(out.String())
		if len(f) != 2 {
			t.Fatalf("CapAdd %v: %q", add, out.String())
		}
		eff, err := strconv.ParseUint(f[1], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		const sysAdmin = 21
		if has := eff&(1<<sysAdmin) != 0; has != (add != nil) {
			t.Errorf("CapAdd %v: CapEff %s, SYS_ADMIN %v", add, f[1], has)
		}
	}
}
