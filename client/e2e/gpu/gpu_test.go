//go:build integration

// Package gpu drives the real xrun binary against a Docker host with an
// NVIDIA GPU and container runtime: GPU assignment, gpu_type, two jobs on
// one GPU, and what a first GPU submit can hit (no runtime, too many GPUs,
// a driver too old for the image's CUDA, a GPU out of memory).
//
// It runs when XRUN_GPU_HOST names such a host (unix://, tcp://, ssh://;
// docs/gpu-host.md says how to make one); XRUN_PLAIN_HOST may name a
// daemon on a GPU machine without the NVIDIA runtime. CI has no GPU host,
// so there the suite reports that and runs nothing; its output on the H100
// host is committed under testdata/runs/. XRUN_BIN is the xrun binary to
// test (default: built from this checkout); the host needs the cuda-torch
// base (scripts/gpu-host/make-base.sh).
package gpu

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/images"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

var (
	host      string
	plainHost string
	tmpDir    string
	eng       engine.Engine
	gpuName   string // the host's first GPU, as nvidia-smi names it
	cudaBase  string // the cuda-torch base the suite's experiments use
)

func TestMain(m *testing.M) { os.Exit(mainGPU(m)) }

func mainGPU(m *testing.M) int {
	host = os.Getenv("XRUN_GPU_HOST")
	plainHost = os.Getenv("XRUN_PLAIN_HOST")
	if host == "" {
		fmt.Fprintln(os.Stderr, "gpu e2e: XRUN_GPU_HOST names no GPU Docker host: nothing to run (CI has none; see docs/gpu-host.md)")
		return 0
	}
	var err error
	if tmpDir, err = os.MkdirTemp("", "xrun-gpu-e2e-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmpDir)
	if x.Bin = os.Getenv("XRUN_BIN"); x.Bin == "" {
		x.Bin = filepath.Join(tmpDir, "xrun")
		if err := xruntest.Build(repoRoot(), x.Bin); err != nil {
			fmt.Fprintf(os.Stderr, "gpu e2e: %v", err)
			return 1
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	target, err := connect.Resolve(connect.HostOptions{Host: host})
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpu e2e:", err)
		return 1
	}
	cli, err := connect.Connect(ctx, target)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpu e2e:", err)
		return 1
	}
	d := engine.FromClient(target.Ref(), cli)
	defer d.Close()
	eng = d
	base, err := images.Resolve(spec.Image{Base: "cuda-torch"}, false)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpu e2e:", err)
		return 1
	}
	cudaBase = base
	found, err := gpus.Discover(ctx, eng, base)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gpu e2e: %v (is %s on the host? scripts/gpu-host/make-base.sh makes it)\n", err, base)
		return 1
	}
	gpuName = found[0].Name
	fmt.Fprintf(os.Stderr, "gpu e2e: host %s, %d GPU(s), GPU 0 is %s, driver %s\n", host, len(found), gpuName, found[0].Driver)
	return m.Run()
}

// repoRoot is the checkout this package is in (the working directory's
// nearest parent with go.mod: the test binary may run from a copy).
func repoRoot() string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// x is the binary under test against the GPU host, with a store of the
// suite's own.
var x = &xruntest.Xrun{Env: func() []string {
	// Standbys are off but in TestStandbyOnGPU: they are containers the
	// other tests do not expect on the host.
	return append(os.Environ(), "DOCKER_HOST="+host, "XDG_DATA_HOME="+filepath.Join(tmpDir, "data"),
		"XDG_CACHE_HOME="+filepath.Join(tmpDir, "cache"), "XRUN_NO_STANDBY=1")
}}

// run is one xrun command (x), logged; it returns stdout, stderr and the
// exit code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, x.Bin, args...)
	cmd.Env = x.Env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("xrun %v: %v", args, err)
	}
	t.Logf("xrun %s: exit %d in %.1fs\n%s", strings.Join(args, " "), code, time.Since(start).Seconds(), lastLines(stderr.String(), 12))
	return stdout.String(), stderr.String(), code
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  | " + strings.Join(lines, "\n  | ")
}

// experiment copies testdata/NAME to a temporary directory, applying
// edit to its xrun.yaml.
func experiment(t *testing.T, name string, edit func(string) string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", name))); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		path := filepath.Join(dir, "xrun.yaml")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(edit(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// jobResults reads the results.json the store holds for job id.
func jobResults(t *testing.T, id string) *result.Results {
	t.Helper()
	r, err := result.ReadFile(filepath.Join(tmpDir, "data", "xrun", "jobs", id, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSubmitOneGPU(t *testing.T) {
	// Without --json, as a person sees it: the id comes from ps --json.
	dir := experiment(t, "gpu-add", nil)
	sr, id := x.Submitted(t, dir, func() xruntest.Result {
		out, stderr, code := run(t, "submit", "--gpus", "1", dir)
		return xruntest.Result{Code: code, Stdout: out, Stderr: stderr}
	})
	if sr.Code != 0 || !strings.Contains(sr.Stdout, "succeeded") {
		t.Fatalf("exit %d\n%s", sr.Code, sr.Stdout)
	}
	// Its GPU's share of the host's CPUs, for it alone (docs/hosts.md).
	if i := strings.Index(sr.Stderr, "job "+id+" gets CPU "); i < 0 {
		t.Errorf("the GPU job was given no CPUs of its own:\n%s", sr.Stderr)
	} else {
		line, _, _ := strings.Cut(sr.Stderr[i:], "\n")
		t.Logf("%s", line)
	}
	st, _, _ := run(t, "status", id)
	if i := strings.Index(st, "cpus"); i < 0 {
		t.Errorf("status does not name the job's CPUs:\n%s", st)
	} else {
		line, _, _ := strings.Cut(st[i:], "\n")
		t.Logf("status: %s", line)
	}
	r := jobResults(t, id)
	if len(r.Env.GPUs) != 1 || r.Env.GPUs[0].Name != gpuName || r.Mode != "gpu" {
		t.Errorf("env GPUs %+v, mode %s: want one %s", r.Env.GPUs, r.Mode, gpuName)
	}
	// xrun's default /dev/shm is 1 GiB (Docker's is 64 MiB).
	if !strings.HasPrefix(r.Image.Digest, "sha256:") || r.Env.Container == nil || r.Env.Container.ShmBytes != 1<<30 {
		t.Errorf("image %+v, container %+v: want a digest and a 1 GiB /dev/shm", r.Image, r.Env.Container)
	}
	if ir := r.Cases[0].Results["torch_add"]; ir == nil || ir.Timing == nil || ir.Timing.Samples < 10 {
		t.Errorf("torch_add was not timed: %+v", ir)
	} else if ir.Timing.Clock != result.ClockKernel {
		t.Errorf("torch_add (about 50 µs) was timed on %q, want the kernel clock", ir.Timing.Clock)
	}
	// The workers read CUPTI's activity API themselves, not through
	// torch's profiler, which costs each batch 0.1 s more.
	if m := r.Methodology; m.KernelClock != "cupti" || m.KernelClockReader != "activity" {
		t.Errorf("kernel clock %q read by %q (note %q), want cupti by activity", m.KernelClock, m.KernelClockReader, m.KernelClockNote)
	}
}

func TestSubmitDeviceZero(t *testing.T) {
	_, stderr, code := run(t, "submit", "--gpus", "device=0", experiment(t, "gpu-add", nil))
	if code != 0 || !strings.Contains(stderr, "gets GPU 0 ("+gpuName+")") {
		t.Fatalf("exit %d", code)
	}
	if _, stderr, code := run(t, "submit", "--gpus", "0", experiment(t, "gpu-add", nil)); code == 0 || !strings.Contains(stderr, "--gpus 0 asks for no GPU") {
		t.Errorf("--gpus 0: exit %d", code)
	}
}

func TestGPUType(t *testing.T) {
	typ := strings.Fields(strings.TrimPrefix(gpuName, "NVIDIA "))[0] // "H100"
	withType := func(typ string) func(string) string {
		return func(y string) string {
			return strings.Replace(y, "resources: {gpus: 1,", "resources: {gpus: 1, gpu_type: "+typ+",", 1)
		}
	}
	if _, _, code := run(t, "submit", experiment(t, "gpu-add", withType(typ))); code != 0 {
		t.Errorf("gpu_type %s on a host with a %s: exit %d", typ, gpuName, code)
	}
	_, stderr, code := run(t, "submit", experiment(t, "gpu-add", withType("B300X")))
	if code == 0 || !strings.Contains(stderr, "has no B300X GPU (resources.gpu_type; it has 1x "+gpuName) || strings.Contains(stderr, "running in container") {
		t.Errorf("gpu_type B300X: exit %d", code)
	}
}

func TestTooManyGPUs(t *testing.T) {
	_, stderr, code := run(t, "submit", "--gpus", "2", experiment(t, "gpu-add", nil))
	if code == 0 || !strings.Contains(stderr, "GPUs, the job asks for 2: ask for fewer or pick a bigger host") {
		t.Errorf("exit %d", code)
	}
}

// TestTwoJobsOneGPU: while a job holds the GPU, a second submit fails at
// once saying so, and with --queue it waits and runs after the first.
func TestTwoJobsOneGPU(t *testing.T) {
	dir := experiment(t, "gpu-add", nil)
	id, _, code := run(t, "submit", "-d", dir)
	id = strings.TrimSpace(id)
	if code != 0 {
		t.Fatalf("first job: exit %d", code)
	}
	_, stderr, code := run(t, "submit", dir)
	if code == 0 || !strings.Contains(stderr, "cannot give this job 1 GPU now (0 free; held: GPU 0 by job "+id) {
		t.Errorf("second job without --queue: exit %d", code)
	}
	out, stderr, code := run(t, "submit", "--json", "--queue", dir)
	if code != 0 || !strings.Contains(stderr, "queued on") {
		t.Fatalf("second job with --queue: exit %d", code)
	}
	second := jobResults(t, xruntest.JobID(t, xruntest.Result{Code: code, Stdout: out, Stderr: stderr}))
	if _, _, code := run(t, "wait", id); code != 0 {
		t.Fatalf("wait %s: exit %d", id, code)
	}
	first, err := result.ReadFile(filepath.Join(tmpDir, "data", "xrun", "jobs", id, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if second.CreatedAt.Before(*first.FinishedAt) {
		t.Errorf("the queued job started at %s, before the first ended at %s", second.CreatedAt, first.FinishedAt)
	}
}

func TestDriverTooOldForImage(t *testing.T) {
	ctx := context.Background()
	base, _ := images.Resolve(spec.Image{Base: "cuda-torch"}, false)
	const ref = "xrun-test/cuda99-torch:gpu-e2e"
	dockerfile := fmt.Sprintf("FROM %s\nLABEL %s=99.0\nENV CUDA_VERSION=99.0.0\n", base, images.LabelCUDA)
	if _, err := eng.Build(ctx, tarOf(t, map[string]string{"Dockerfile": dockerfile}), engine.BuildOptions{Tag: ref}, func(string) {}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.RemoveImage(context.Background(), ref) })
	_, stderr, code := run(t, "submit", "--base", ref, experiment(t, "gpu-add", nil))
	if code == 0 || !strings.Contains(stderr, "the image is built for CUDA 99.0, which needs a newer driver than any this table knows; the host's NVIDIA driver") || strings.Contains(stderr, "running in container") {
		t.Errorf("exit %d", code)
	}
	if m := regexp.MustCompile(`building (xrun/gpu-add:[0-9a-f]+)`).FindStringSubmatch(stderr); m != nil {
		t.Cleanup(func() { eng.RemoveImage(context.Background(), m[1]) })
	}
}

func TestGPUOutOfMemory(t *testing.T) {
	_, stderr, code := run(t, "submit", experiment(t, "gpu-oom", nil))
	if code != 2 || !strings.Contains(stderr, "implementation too_big ran out of GPU memory at n=1048576 (") ||
		!strings.Contains(stderr, "make the case smaller or run it on a GPU with more memory") {
		t.Errorf("exit %d", code)
	}
}

func TestHostWithoutNVIDIARuntime(t *testing.T) {
	if plainHost == "" {
		t.Skip("XRUN_PLAIN_HOST names no daemon without the NVIDIA runtime (the CI suite checks one: client/gpus TestNoGPURuntime)")
	}
	ctx := context.Background()
	target, err := connect.Resolve(connect.HostOptions{Host: plainHost})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := connect.Connect(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	plain := engine.FromClient(target.Ref(), cli)
	defer plain.Close()
	const ref = "xrun-test/empty:gpu-e2e"
	if _, err := plain.Build(ctx, tarOf(t, map[string]string{"Dockerfile": "FROM scratch\nLABEL dev.xrun.test=gpu-e2e\n"}), engine.BuildOptions{Tag: ref}, func(string) {}); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := run(t, "submit", "--host", plainHost, "--base", ref, experiment(t, "gpu-add", nil))
	if code == 0 || !strings.Contains(stderr, "has no NVIDIA GPU runtime for this GPU job: submit with --cpu to run without GPUs, or install the NVIDIA Container Toolkit") {
		t.Errorf("exit %d", code)
	}
}

// tarOf is a build context holding files.
func tarOf(t *testing.T, files map[string]string) *bytes.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(data))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(buf.Bytes())
}
