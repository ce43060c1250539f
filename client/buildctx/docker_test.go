//go:build integration

package buildctx

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

	"github.com/xrun-dev/xrun/spec"
)

// needDocker skips the test when no Docker daemon answers, except under
// CI=true, where that is a failure.
func needDocker(t *testing.T) {
	t.Helper()
	out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
	if err == nil {
		return
	}
	testenv.Missing(t, "docker daemon unreachable: %v: %s", err, out)
}

func docker(t *testing.T, stdin []byte, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("docker", args...)
	cmd.Env = append(os.Environ(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestClassicBuild builds a generated Dockerfile from scratch with the
// classic builder, runs it with the code copied in as xrun does, and checks
// that a code edit leaves the image as it was.
func TestClassicBuild(t *testing.T) {
	needDocker(t)
	tmp := t.TempDir()
	runner := filepath.Join(tmp, "runner")
	build := exec.Command("go", "build", "-o", runner, "./testdata/fakerunner")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build fake runner: %v\n%s", err, out)
	}
	exp := filepath.Join(tmp, "exp")
	kernels := filepath.Join(tmp, "kernels", "k")
	for p, content := range map[string]string{
		filepath.Join(exp, "xrun.yaml"):   "name: t\n",
		filepath.Join(exp, "bench.py"):    "v1",
		filepath.Join(exp, "run.sh"):      "#!/bin/sh",
		filepath.Join(kernels, "k.py"):    "kernel",
		filepath.Join(exp, ".xrunignore"): "secret\n",
		filepath.Join(exp, "secret"):      "s",
	} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(exp, "run.sh"), 0o755)
	os.Symlink("bench.py", filepath.Join(exp, "link.py"))

	var id [6]byte
	rand.Read(id[:])
	tag := "xrun-test/dockerfile:" + hex.EncodeToString(id[:])
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag).Run() })
	labels := map[string]string{"dev.xrun.experiment": "t", "dev.xrun.note": `$HOME "q" \`}
	df, err := Dockerfile(DockerfileOptions{Base: "scratch", RunnerSrc: "xrun-runner", Experiment: "t", Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	collect := func() *Context {
		c, err := Collect(exp, &spec.Spec{Include: []string{"../kernels/k"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	buildImage := func() string {
		var tarball bytes.Buffer
		extras := append(SkelDirs(), Extra{Name: "Dockerfile", Data: df}, Extra{Name: "xrun-runner", Mode: 0o755, Src: runner})
		if err := WriteExtras(&tarball, extras...); err != nil {
			t.Fatal(err)
		}
		return docker(t, tarball.Bytes(), []string{"DOCKER_BUILDKIT=0"}, "build", "-t", tag, "-")
	}
	// runJob runs the image as xrun does: a container made from it, the
	// code copied to /xrun/exp, then started.
	runJob := func() string {
		id := strings.TrimSpace(docker(t, nil, nil, "create", tag))
		defer exec.Command("docker", "rm", "-f", id).Run()
		var code bytes.Buffer
		if err := collect().WriteCode(&code); err != nil {
			t.Fatal(err)
		}
		docker(t, code.Bytes(), nil, "cp", "-", id+":/xrun")
		return docker(t, nil, nil, "start", "-a", id)
	}
	buildImage()
	first := strings.TrimSpace(docker(t, nil, nil, "image", "inspect", "--format", "{{.Id}}", tag))
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", first).Run() })

	out := runJob()
	for _, want := range []string{
		"args=--experiment /xrun/exp --out /xrun/out",
		"wd=/xrun/exp",
		"PYTHONUNBUFFERED=1",
		"out=dir",
		"file=/xrun/exp/bench.py -rw-r--r-- v1",
		"file=/xrun/exp/run.sh -rwxr-xr-x #!/bin/sh",
		"file=/xrun/exp/link.py Lrwxrwxrwx -> bench.py",
		"file=/xrun/exp/k/k.py -rw-r--r-- kernel",
		"file=/xrun/exp/xrun.yaml",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("container output lacks %q:\n%s", want, out)
		}
	}
	for _, banned := range []string{"secret", ".xrunignore"} {
		if strings.Contains(out, banned) {
			t.Errorf("container has %s:\n%s", banned, out)
		}
	}
	got := docker(t, nil, nil, "image", "inspect", "--format", `{{index .Config.Labels "dev.xrun.note"}}`, tag)
	if strings.TrimSpace(got) != labels["dev.xrun.note"] {
		t.Errorf("label dev.xrun.note = %q, want %q", strings.TrimSpace(got), labels["dev.xrun.note"])
	}

	// A code edit needs no build: the image holds no code, and the next
	// job's container gets the edited file.
	os.WriteFile(filepath.Join(exp, "bench.py"), []byte("v2"), 0o644)
	if log := buildImage(); strings.Count(log, "Using cache") < 5 {
		t.Errorf("a rebuild after a code-only edit was not all cached:\n%s", log)
	}
	if out := runJob(); !strings.Contains(out, "bench.py -rw-r--r-- v2") {
		t.Errorf("edited file not in the job's container:\n%s", out)
	}
}
