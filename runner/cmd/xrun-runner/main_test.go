package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// buildRunner builds the binary as releases do: static, version stamped.
func buildRunner(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "xrun-runner")
	cmd := exec.Command("go", "build", "-ldflags", "-X github.com/xrun-dev/xrun/internal/version.Version=v1.2.3", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildRunner(t)
	t.Run("static", func(t *testing.T) {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("the runner has an ELF interpreter: it is not static")
			}
		}
	})
	t.Run("version", func(t *testing.T) {
		out, err := exec.Command(bin, "--version").Output()
		if err != nil || strings.TrimSpace(string(out)) != "v1.2.3" {
			t.Errorf("--version: %q, %v", out, err)
		}
	})
	t.Run("bad flag", func(t *testing.T) {
		err := exec.Command(bin, "--nope").Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != contract.ExitUsage {
			t.Errorf("exit: %v", err)
		}
	})
	t.Run("runs an experiment", func(t *testing.T) {
		out := t.TempDir()
		cmd := exec.Command(bin, "--experiment", "../../run/testdata/command", "--out", out, "--mode", "cpu")
		cmd.Env = append(os.Environ(), "XRUN_JOB_ID=j-bin")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		r, err := result.ReadFile(filepath.Join(out, result.FileName))
		if err != nil {
			t.Fatal(err)
		}
		if r.JobID != "j-bin" || r.RunnerVersion != "v1.2.3" || r.Status != result.StatusSucceeded {
			t.Errorf("job %q version %q status %q", r.JobID, r.RunnerVersion, r.Status)
		}
		if !strings.Contains(stderr.String(), "fast") {
			t.Errorf("no results table on stderr:\n%s", stderr.String())
		}
	})
	t.Run("SIGTERM", func(t *testing.T) {
		out := t.TempDir()
		cmd := exec.Command(bin, "--experiment", "testdata/hang", "--out", out, "--mode", "cpu")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		logPath := filepath.Join(out, "logs", "stuck.log")
		deadline := time.Now().Add(30 * time.Second)
		var pid string
		for time.Now().Before(deadline) {
			b, _ := os.ReadFile(logPath)
			if _, after, ok := strings.Cut(string(b), "sleeping as pid "); ok {
				pid = strings.TrimSpace(after)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if pid == "" {
			cmd.Process.Kill()
			t.Fatalf("the benchmark never started timing:\n%s", stderr.String())
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != contract.ExitCancelled {
			t.Errorf("exit: %v\n%s", err, stderr.String())
		}
		r, err := result.ReadFile(filepath.Join(out, result.FileName))
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != result.StatusCancelled {
			t.Errorf("status %q", r.Status)
		}
		if _, err := os.Stat("/proc/" + pid); err == nil {
			t.Errorf("the worker (pid %s) outlived the runner", pid)
		}
	})
}
