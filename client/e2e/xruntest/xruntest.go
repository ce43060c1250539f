// Package xruntest builds the xrun binary and runs it as a user would, for
// the end-to-end suites (client/e2e, client/e2e/k8s, client/e2e/gpu,
// client/connect): the build, the CPU base they submit on, one call with a
// time limit, its exit code and output, the check every suite makes of
// them, and the JSON the suites read a job from (its id comes from
// submit --json or ps --json, never from what xrun says to a person).
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

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/internal/testenv"
	"github.com/xrun-dev/xrun/result"
)

// Connect connects to the Docker daemon that xrun picks by default in this
// environment (DOCKER_HOST, the docker context, the local socket).
func Connect() (engine.Engine, error) {
	target, err := connect.Resolve(connect.HostOptions{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cli, err := connect.Connect(ctx, target)
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
	cmd := exec.Command("go", "build", "-trimpath", "-o", dst, "./cmd/xrun")
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
		return testenv.Unavailable(suite, "%s is missing and making it needs root: run `sudo images/make-cpu-base.sh`", base)
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
	ID     string `json:"id"`
	Status string `json:"status"`
	Host   string `json:"host"`
	// ContainerName names the job's container, or its Job on a cluster.
	ContainerName string `json:"container_name"`
	ImageRef      string `json:"image_ref"`
	ExitCode      *int   `json:"exit_code"`
	Error         string `json:"error"`
	Container     *struct {
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

// Job is a job record as `xrun submit --json` and `xrun ps --json` print
// it, as far as the suites read it.
type Job struct {
	ID            string `json:"id"`
	Host          string `json:"host"`
	ContainerName string `json:"container_name"`
	Experiment    string `json:"experiment"`
	ExperimentDir string `json:"experiment_dir"`
	Status        string `json:"status"`
	ExitCode      *int   `json:"exit_code"`
	Error         string `json:"error"`
}

// DecodeJob reads the job record r, an `xrun submit --json` call on one
// host, printed, whatever its exit code: a submit prints one for every
// job it recorded, however the job ended. ok is false when stdout is
// empty (the submit failed or was interrupted before it recorded a job);
// anything else that is not a record fails t.
func DecodeJob(t testing.TB, r Result) (j Job, ok bool) {
	t.Helper()
	if strings.TrimSpace(r.Stdout) == "" {
		return j, false
	}
	if err := json.Unmarshal([]byte(r.Stdout), &j); err != nil || j.ID == "" {
		t.Fatalf("submit --json (exit %d) printed no job record: %v\nstdout:\n%s\nstderr:\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	return j, true
}

// JobID is the id of the job r, an `xrun submit --json` call on one host,
// printed the record of; it fails t when r printed none.
func JobID(t testing.TB, r Result) string {
	t.Helper()
	j, ok := DecodeJob(t, r)
	if !ok {
		t.Fatalf("submit --json (exit %d) printed no job record\nstderr:\n%s", r.Code, r.Stderr)
	}
	return j.ID
}

// DecodeJobs reads the jobs r printed as a JSON array, whatever its exit
// code: an `xrun ps --json` call, or an `xrun submit --json` with several
// --host (the jobs that started). Anything else fails t.
func DecodeJobs(t testing.TB, r Result) []Job {
	t.Helper()
	var js []Job
	if err := json.Unmarshal([]byte(r.Stdout), &js); err != nil {
		t.Fatalf("exit %d: stdout is no JSON array of jobs: %v\nstdout:\n%s\nstderr:\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	return js
}

// Xrun is the binary under test in a suite's environment.
type Xrun struct {
	Bin string
	// Env is the environment of a call, read at each call: a suite may
	// switch job stores between calls.
	Env func() []string
}

// Run runs the binary with args and waits at most limit (Run).
func (x *Xrun) Run(t testing.TB, limit time.Duration, args ...string) Result {
	t.Helper()
	return Run(t, limit, x.Bin, x.Env(), args...)
}

// RunEnv is Run with the variables extra added to the environment.
func (x *Xrun) RunEnv(t testing.TB, limit time.Duration, extra []string, args ...string) Result {
	t.Helper()
	return Run(t, limit, x.Bin, append(x.Env(), extra...), args...)
}

// Status is what `xrun status --json ID` says of job id; it fails t
// unless the call succeeds.
func (x *Xrun) Status(t testing.TB, id string) Status {
	t.Helper()
	return DecodeStatus(t, x.Run(t, time.Minute, "status", "--json", id))
}

// Results are the results.json the job store holds for job id; it fails
// t unless the store has them.
func (x *Xrun) Results(t testing.TB, id string) *result.Results {
	t.Helper()
	r, err := result.ReadFile(filepath.Join(x.Status(t, id).StoreDir, result.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Cache is what results r say of the compile caches their job started
// with; it fails t when they say nothing (env.cache).
func Cache(t testing.TB, r *result.Results) *result.Cache {
	t.Helper()
	if r.Env.Cache == nil {
		t.Fatal("results.json says nothing of the compile caches (env.cache)")
	}
	return r.Env.Cache
}

// Jobs are the jobs `xrun ps --all --json` lists; it fails t unless the
// call succeeds.
func (x *Xrun) Jobs(t testing.TB) []Job {
	t.Helper()
	r := x.Run(t, time.Minute, "ps", "--all", "--json")
	Expect(t, r, 0)
	return DecodeJobs(t, r)
}

// Submitted calls submit, a submit of directory dir that prints what a
// person sees (not --json), and returns its result and the id of the job
// it made: the one job of dir that `xrun ps --all --json` lists after the
// call and did not before. It fails t unless there is exactly one.
func (x *Xrun) Submitted(t testing.TB, dir string, submit func() Result) (Result, string) {
	t.Helper()
	r, js := x.SubmittedJobs(t, dir, submit)
	if len(js) != 1 {
		t.Fatalf("ps --all --json lists %d new jobs of %s, want 1: %+v\nsubmit exited %d\nstderr:\n%s", len(js), dir, js, r.Code, r.Stderr)
	}
	return r, js[0].ID
}

// SubmittedJobs is Submitted for a submit that may make several jobs
// (one per --host) or none: it returns every job of dir that
// `xrun ps --all --json` lists after the call and did not before.
func (x *Xrun) SubmittedJobs(t testing.TB, dir string, submit func() Result) (Result, []Job) {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]bool{}
	for _, j := range x.Jobs(t) {
		before[j.ID] = true
	}
	r := submit()
	var made []Job
	for _, j := range x.Jobs(t) {
		if !before[j.ID] && j.ExperimentDir == abs {
			made = append(made, j)
		}
	}
	return r, made
}

// SweepOfFour makes the CPU sweep of dir, a copy of the quick fixture,
// four cases instead of two (for a sweep split over two jobs).
func SweepOfFour(t testing.TB, dir string) {
	t.Helper()
	spec := filepath.Join(dir, "xrun.yaml")
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	four := strings.Replace(string(data), "cpu_sweep: {N: [1024, 4096]}", "cpu_sweep: {N: [1024, 2048, 4096, 8192]}", 1)
	if four == string(data) {
		t.Fatal("the quick fixture's cpu_sweep changed: update SweepOfFour")
	}
	if err := os.WriteFile(spec, []byte(four), 0o644); err != nil {
		t.Fatal(err)
	}
}

// CaseStatuses is each case of r with its implementations' statuses, in
// order: what a sweep run whole and the same sweep split and gathered
// must agree on.
func CaseStatuses(r *result.Results) string {
	var out []string
	for _, c := range r.Cases {
		s := c.Label + ":"
		for _, name := range append([]string{result.Reference}, r.Implementations...) {
			if ir := c.Results[name]; ir != nil {
				s += " " + name + "=" + ir.Status
			}
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// CheckSplitSweep checks the job that split, an attached submit --split 2
// --json of a sweep, gathered, against whole, the same sweep submitted as
// one job: the same cases in the same order with the same statuses, both
// parts succeeded on a place whose address starts with host and ran at
// once, and the gathered log is the two parts' logs.
func (x *Xrun) CheckSplitSweep(t testing.TB, whole, split Result, host string) {
	t.Helper()
	wj, _ := DecodeJob(t, whole)
	want := x.Results(t, wj.ID)
	gj, _ := DecodeJob(t, split)
	got := x.Results(t, gj.ID)
	if got.Status != result.StatusSucceeded || got.Split == nil || got.Split.Parts != 2 || len(got.Split.Jobs) != 2 {
		t.Fatalf("gathered job %s: status %s, split %+v", gj.ID, got.Status, got.Split)
	}
	if a, b := CaseStatuses(want), CaseStatuses(got); a != b {
		t.Errorf("gathered cases differ from the whole sweep's:\n whole: %s\ngather: %s", a, b)
	}
	var parts []*result.Results
	for _, sj := range got.Split.Jobs {
		if !strings.HasPrefix(sj.Host, host) || sj.Status != result.StatusSucceeded {
			t.Errorf("part %+v", sj)
		}
		parts = append(parts, x.Results(t, sj.JobID))
	}
	if len(parts) == 2 && (parts[0].FinishedAt == nil || parts[1].FinishedAt == nil ||
		!parts[0].CreatedAt.Before(*parts[1].FinishedAt) || !parts[1].CreatedAt.Before(*parts[0].FinishedAt)) {
		t.Errorf("the parts did not run at once: part 1 %s-%v, part 2 %s-%v", parts[0].CreatedAt, parts[0].FinishedAt, parts[1].CreatedAt, parts[1].FinishedAt)
	}
	logs := x.Run(t, time.Minute, "logs", gj.ID)
	Expect(t, logs, 0)
	if strings.Count(logs.Stdout, "status: succeeded") != 2 || !strings.Contains(logs.Stdout, "==> part 2/2: job") {
		t.Errorf("the gathered log is not its two parts' logs:\n%s", logs.Stdout)
	}
}
