// Package xruntest builds the xrun binary and runs it as a user would, for
// the end-to-end suites (client/e2e, client/e2e/k8s, client/e2e/gpu,
// client/hosts): the build, the CPU base they submit on, one call with a
// time limit, its exit code and output, and the check every suite makes of
// them.
package xruntest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/runner/testenv"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/hosts"
)

// Unavailable says on stderr why suite cannot run and returns the exit
// code of its TestMain: 1 under CI=true, where that is a failure, else 0
// (the suite is skipped).
func Unavailable(suite, format string, args ...any) int {
	return testenv.Unavailable(suite, format, args...)
}

// Connect connects to the Docker daemon that xrun picks by default in this
// environment (DOCKER_HOST, the docker context, the local socket).
func Connect() (engine.Engine, error) {
	target, err := hosts.Resolve(hosts.Options{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cli, err := hosts.Connect(ctx, target)
	if err != nil {
		return nil, err
	}
	return engine.FromClient(target.Ref(), cli), nil
}

// Repo is the root of the checkout this package was compiled from.
func Repo() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// Build builds the checkout at repo's xrun into dst, static, as a user's
// make build does.
func Build(repo, dst string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-o", dst, "./client/cmd/xrun")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build xrun: %v\n%s", err, out)
	}
	return nil
}

// MakeBase makes the CPU base the suites submit on with
// images/make-cpu-base.sh (it needs root), its output going to w.
func MakeBase(repo string, w io.Writer) error {
	cmd := exec.Command("bash", filepath.Join(repo, "images", "make-cpu-base.sh"))
	cmd.Stdout, cmd.Stderr = w, w
	return cmd.Run()
}

// EnsureBase makes the CPU base image base with MakeBase when the daemon
// e lacks it (about a minute; needs root). It returns -1 when suite can
// run, else the exit code of its TestMain: a daemon error or a failed
// script fails it; without root the suite is Unavailable.
func EnsureBase(e engine.Engine, repo, base, suite string) int {
	ok, err := e.ImageExists(context.Background(), base)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", suite, err)
		return 1
	}
	if ok {
		return -1
	}
	if os.Geteuid() != 0 {
		return Unavailable(suite, "%s is missing and making it needs root: run `sudo images/make-cpu-base.sh`", base)
	}
	fmt.Fprintf(os.Stderr, "%s: making %s with images/make-cpu-base.sh (about a minute)\n", suite, base)
	if err := MakeBase(repo, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "%s: make %s: %v\n", suite, base, err)
		return 1
	}
	return -1
}

// Result is how one xrun call ended.
type Result struct {
	Code           int
	Stdout, Stderr string
	// MaxRSSBytes is the most memory the call held at once, as its
	// VmHWM read while it ran (wait4's ru_maxrss would count the memory
	// of the test process it was started from).
	MaxRSSBytes int64
}

// Run runs bin with args in the environment env and waits at most limit.
// A binary that cannot start, or a call that runs past limit, fails t.
func Run(t testing.TB, limit time.Duration, bin string, env []string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	var hwm atomic.Int64
	err := cmd.Start()
	if err == nil {
		done := make(chan struct{})
		go watchHWM(cmd.Process.Pid, &hwm, done)
		err = cmd.Wait()
		close(done)
	}
	r := Result{Stdout: out.String(), Stderr: errb.String(), MaxRSSBytes: hwm.Load()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	default:
		t.Fatalf("xrun %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("xrun %v ran past %v\nstderr:\n%s", args, limit, r.Stderr)
	}
	return r
}

// watchHWM reads the peak resident memory (VmHWM) of process pid until
// done, keeping the largest value read.
func watchHWM(pid int, hwm *atomic.Int64, done <-chan struct{}) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	for {
		if b, err := os.ReadFile(path); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
					if kb*1024 > hwm.Load() {
						hwm.Store(kb * 1024)
					}
				}
			}
		}
		select {
		case <-done:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Expect fails t at once unless r exited with code (printing both
// outputs), and reports each of stderrHas that r's stderr lacks.
func Expect(t testing.TB, r Result, code int, stderrHas ...string) {
	t.Helper()
	if r.Code != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, code, r.Stdout, r.Stderr)
	}
	for _, s := range stderrHas {
		if !strings.Contains(r.Stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, r.Stderr)
		}
	}
}

// Status is what `xrun status --json` prints, as far as the suites read it.
type Status struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	Host      string `json:"host"`
	ExitCode  *int   `json:"exit_code"`
	Error     string `json:"error"`
	Container *struct {
		State   string `json:"state"`
		Message string `json:"message"`
	} `json:"container"`
	StoreDir string `json:"store_dir"`
}

// DecodeStatus reads r, an `xrun status --json` call: it fails t unless
// the call exited 0 and printed a status.
func DecodeStatus(t testing.TB, r Result) Status {
	t.Helper()
	Expect(t, r, 0)
	var s Status
	if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.Stdout)
	}
	return s
}
