package run

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/runner/harness"
)

// standbyAt makes the standby's go file a temporary one.
func standbyAt(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "go.json")
	old := standbyGoFile
	standbyGoFile = path
	t.Cleanup(func() { standbyGoFile = old })
	return path
}

// A standby prepares the run, waits for the go file, then runs the job
// with what it names; what it prepared is the job's.
func TestStandbyRunsTheJobItIsHanded(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	noGPU(t)
	py := python(t)
	goFile := standbyAt(t)
	t.Setenv(contract.EnvStandby, "60")
	t.Setenv(contract.EnvJobID, "0123456789ab")
	t.Setenv(contract.EnvCodeHash, "from-the-standby")
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main(context.Background(), "xrun-runner",
			[]string{"--experiment", "testdata/numpy-saxpy", "--out", out, "--python", py, "--mode", "cpu"}, &stdout, &stderr)
	}()
	time.Sleep(1500 * time.Millisecond)
	select {
	case code := <-done:
		t.Fatalf("the standby exited %d before its job came:\n%s", code, stderr.String())
	default:
	}
	if _, err := os.Stat(filepath.Join(out, result.FileName)); err == nil {
		t.Fatal("the standby wrote results before its job came")
	}
	// Written in two steps, as an archive is extracted: half a file is
	// read again, not taken for a job.
	b, _ := json.Marshal(map[string]any{"env": map[string]string{contract.EnvCodeHash: "the-job's"}})
	if err := os.WriteFile(goFile, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := os.WriteFile(goFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var code int
	select {
	case code = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the standby's job did not end within 2 minutes")
	}
	if code != contract.ExitSucceeded {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "standby: waited") {
		t.Errorf("the log does not say the standby prepared the run:\n%s", stderr.String())
	}
	r, err := result.ReadFile(filepath.Join(out, result.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if r.Image.CodeHash != "the-job's" {
		t.Errorf("code hash %q, want the go file's", r.Image.CodeHash)
	}
	// The daemon that copied the go file in may still be setting its
	// owner and mode: the runner leaves it, or the client's copy fails.
	if _, err := os.Stat(goFile); err != nil {
		t.Errorf("the go file was removed under the copy that wrote it: %v", err)
	}
	if _, ok := os.LookupEnv(contract.EnvStandby); ok {
		t.Errorf("%s is still set for the job's processes", contract.EnvStandby)
	}
}

// A standby whose job never comes exits having run nothing; a go file
// that sets what may not differ is refused.
func TestStandbyWithoutAJob(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	noGPU(t)
	py := python(t)
	goFile := standbyAt(t)
	args := func(out string) []string {
		return []string{"--experiment", "testdata/numpy-saxpy", "--out", out, "--python", py, "--mode", "cpu"}
	}
	t.Setenv(contract.EnvStandby, "1")
	out := t.TempDir()
	var stderr bytes.Buffer
	if code := Main(context.Background(), "xrun-runner", args(out), &bytes.Buffer{}, &stderr); code != contract.ExitSucceeded {
		t.Errorf("an idle standby exited %d, want 0:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "no job came within 1s; it ran nothing") {
		t.Errorf("stderr %q does not say no job came", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(out, result.FileName)); err == nil {
		t.Error("an idle standby wrote results")
	}

	t.Setenv(contract.EnvStandby, "30")
	if err := os.WriteFile(goFile, []byte(`{"env": {"XRUN_PYTHON": "/tmp/evil"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := Main(context.Background(), "xrun-runner", args(t.TempDir()), &bytes.Buffer{}, &stderr); code != contract.ExitInfra {
		t.Errorf("a go file setting XRUN_PYTHON: exit %d, want %d:\n%s", code, contract.ExitInfra, stderr.String())
	}
	if !strings.Contains(stderr.String(), "sets XRUN_PYTHON") {
		t.Errorf("stderr %q does not name the variable", stderr.String())
	}
}

// A job that comes before the standby's zygote is done waits for the rest
// of its imports, and the job's log says how long.
func TestStandbyReadyLine(t *testing.T) {
	came := time.Date(2026, 11, 26, 13, 35, 50, 0, time.UTC)
	w := &Warm{z: &harness.Zygote{Loaded: []string{"numpy", "torch", "triton"}}, took: 3700 * time.Millisecond, Waited: 300 * time.Millisecond, came: came}
	w.ready = came.Add(3400 * time.Millisecond)
	if got, want := w.readyLine(), "standby: waited 0.3 s for this job; its zygote had imported numpy, torch, triton in 3.7 s, the last 3.4 s of them while the job waited"; got != want {
		t.Errorf("late zygote:\n got %q\nwant %q", got, want)
	}
	w.ready = came.Add(-time.Minute)
	if got, want := w.readyLine(), "standby: waited 0.3 s for this job; its zygote had imported numpy, torch, triton in 3.7 s"; got != want {
		t.Errorf("zygote ready before the job:\n got %q\nwant %q", got, want)
	}
}
