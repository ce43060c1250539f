//go:build integration

package images

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/internal/testenv"

	"github.com/xrun-dev/xrun/client/buildctx"
)

// cpuBase is the image make-cpu-base.sh makes by default.
const cpuBase = "xrun/cpu-base:bookworm"

// needImages runs the test only under CI or with XRUN_TEST_IMAGES=1 (making
// the base takes root and 1-3 min) and with a Docker daemon, which under
// CI=true must answer.
func needImages(t *testing.T) {
	t.Helper()
	if !testenv.CI() && os.Getenv("XRUN_TEST_IMAGES") != "1" {
		t.Skip("set XRUN_TEST_IMAGES=1 to make and check the Debian CPU base (root, 1-3 min)")
	}
	if out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		testenv.Missing(t, "docker daemon unreachable: %v: %s", err, out)
	}
}

// makeCPUBase runs make-cpu-base.sh (a no-op when the image exists), with
// sudo when the test is not root.
func makeCPUBase(t *testing.T) {
	t.Helper()
	args := []string{"./make-cpu-base.sh"}
	if os.Geteuid() != 0 {
		args = append([]string{"sudo", "-n", "--preserve-env=DOCKER_HOST"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("%s", out)
}

func TestCPUBaseImage(t *testing.T) {
	needImages(t)
	makeCPUBase(t)
	out, err := exec.Command("docker", "run", "--rm", cpuBase, "python3", "-c", "import numpy; print(numpy.__version__)").CombinedOutput()
	if err != nil {
		t.Fatalf("import numpy in %s: %v\n%s", cpuBase, err, out)
	}
	t.Logf("numpy %s", strings.TrimSpace(string(out)))
}

// TestExperimentImageOnCPUBase builds generated Dockerfiles on the base the
// script makes, with the classic builder: apt packages install, and pip
// requirements on a base without pip fail with the generated message.
func TestExperimentImageOnCPUBase(t *testing.T) {
	needImages(t)
	makeCPUBase(t)
	tmp := t.TempDir()
	runner := filepath.Join(tmp, "runner")
	build := exec.Command("go", "build", "-o", runner, "./testdata/runner")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the test runner: %v\n%s", err, out)
	}
	exp := filepath.Join(tmp, "exp")
	if err := os.MkdirAll(exp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(exp, "xrun.yaml"), []byte("name: base-test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := buildctx.Collect(exp, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var id [6]byte
	rand.Read(id[:])
	build1 := func(o buildctx.DockerfileOptions) (string, string, error) {
		o.Base, o.RunnerSrc = cpuBase, "xrun-runner"
		df, err := buildctx.Dockerfile(o)
		if err != nil {
			t.Fatal(err)
		}
		var tarball bytes.Buffer
		extras := append(buildctx.SkelDirs(), buildctx.Extra{Name: "Dockerfile", Data: df}, buildctx.Extra{Name: "xrun-runner", Mode: 0o755, Src: runner})
		if err := c.WriteTar(&tarball, extras...); err != nil {
			t.Fatal(err)
		}
		tag := "xrun-test/base:" + hex.EncodeToString(id[:]) + strings.Join(o.Apt, "")
		t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag).Run() })
		// --force-rm: the failing build below leaves no container behind.
		cmd := exec.Command("docker", "build", "--force-rm", "-t", tag, "-")
		cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
		cmd.Stdin = &tarball
		out, err := cmd.CombinedOutput()
		return tag, string(out), err
	}

	tag, out, err := build1(buildctx.DockerfileOptions{Apt: []string{"python3-yaml"}})
	if err != nil {
		t.Fatalf("build with apt packages: %v\n%s", err, out)
	}
	// The base's CMD must not become arguments of the runner.
	cmd, err := exec.Command("docker", "image", "inspect", "--format", "{{json .Config.Cmd}}", tag).CombinedOutput()
	if err != nil || strings.TrimSpace(string(cmd)) != "null" {
		t.Errorf("image CMD = %s (%v), want none", cmd, err)
	}
	run, err := exec.Command("docker", "run", "--rm", tag).CombinedOutput()
	if err != nil || !strings.Contains(string(run), "numpy ") || !strings.Contains(string(run), " yaml ") {
		t.Fatalf("run %s: %v\n%s", tag, err, run)
	}

	_, out, err = build1(buildctx.DockerfileOptions{Python: []string{"numpy>=1"}})
	if err == nil || !strings.Contains(out, "xrun: the base image has no pip for python3") {
		t.Fatalf("pip on a base without pip: err %v, output:\n%s", err, out)
	}
}
