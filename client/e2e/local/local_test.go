//go:build integration

// Package local_test runs xrun run --local as a user does, without
// Docker: the run is a job of this machine (client/backend/local), and
// status, logs, results, wait and ps take its id afterwards.
package local_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/internal/testenv"
	"github.com/xrun-dev/xrun/result"
)

var (
	xrunBin string
	dataDir string
	repo    string
)

func TestMain(m *testing.M) {
	os.Exit(mainLocal(m))
}

func mainLocal(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "xrun-local-")
	if err != nil {
		return testenv.Unavailable("local", "%v", err)
	}
	defer os.RemoveAll(tmp)
	repo = xruntest.Repo()
	xrunBin, dataDir = filepath.Join(tmp, "xrun"), filepath.Join(tmp, "data")
	x.Bin = xrunBin
	if err := xruntest.Build(repo, xrunBin); err != nil {
		return testenv.Unavailable("local", "%v", err)
	}
	return m.Run()
}

func env() []string {
	return append(os.Environ(), "XDG_DATA_HOME="+dataDir, "XRUN_HOST=", "XRUN_CONTEXT=")
}

// x is the binary under test, with the store dataDir.
var x = &xruntest.Xrun{Env: env}

func xrun(t *testing.T, limit time.Duration, args ...string) xruntest.Result {
	t.Helper()
	return x.Run(t, limit, args...)
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	// A copy: the run writes nothing into the repository's fixtures.
	dst := filepath.Join(t.TempDir(), filepath.Base(name))
	if out, err := exec.Command("cp", "-r", filepath.Join(repo, "client", "e2e", "testdata", name), dst).CombinedOutput(); err != nil {
		t.Fatalf("copy fixture: %v\n%s", err, out)
	}
	return dst
}

func TestRunLocalIsAJob(t *testing.T) {
	out, dir := t.TempDir(), fixture(t, "quick")
	// As a person runs it: the job's id comes from ps --json.
	r, id := x.Submitted(t, dir, func() xruntest.Result {
		return xrun(t, 3*time.Minute, "run", "--local", "--cpu", "--out", out, dir)
	})
	if r.Code == 4 && strings.Contains(r.Stderr, "numpy") {
		testenv.Missing(t, "no python3 with numpy on this machine (apt-get install python3-numpy): %s", r.Stderr)
	}
	xruntest.Expect(t, r, 0, "status: succeeded", "results: "+filepath.Join(out, "results.json"))
	host := x.Status(t, id).Host
	if !strings.HasPrefix(host, "local://") || !regexp.MustCompile(`job `+id+` running in process \d+ on `+regexp.QuoteMeta(host)).MatchString(r.Stderr) {
		t.Errorf("host %q; stderr does not say the job runs in a process there:\n%s", host, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "loop") {
		t.Errorf("no table on stdout:\n%s", r.Stdout)
	}
	if rs, err := result.ReadFile(filepath.Join(out, "results.json")); err != nil || !rs.Success || rs.JobID != id {
		t.Errorf("--out's results: %v %+v", err, rs)
	}

	st := xruntest.DecodeStatus(t, xrun(t, time.Minute, "status", "--json", id))
	if st.ID != id || st.Status != "succeeded" || st.Host != host || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Errorf("status --json: %+v", st)
	}
	logs := xrun(t, time.Minute, "logs", id)
	xruntest.Expect(t, logs, 0)
	if !strings.Contains(logs.Stdout, "status: succeeded") || !strings.Contains(logs.Stdout, "loop: correct") {
		t.Errorf("logs:\n%s", logs.Stdout)
	}
	// The log has the runner's own times alone: --timestamps says so.
	timed := xrun(t, time.Minute, "logs", "--timestamps", id)
	xruntest.Expect(t, timed, 0)
	if timed.Stdout != logs.Stdout || !strings.Contains(timed.Stderr, "xrun run --local") || !strings.Contains(timed.Stderr, "--timestamps adds none") {
		t.Errorf("logs --timestamps: stderr %q, stdout the same as without: %v", timed.Stderr, timed.Stdout == logs.Stdout)
	}
	res := xrun(t, time.Minute, "results", "--json", id)
	xruntest.Expect(t, res, 0)
	var rs result.Results
	if err := json.Unmarshal([]byte(res.Stdout), &rs); err != nil || rs.JobID != id || rs.Experiment != "e2e-quick" || !rs.Success {
		t.Errorf("results --json: %v\n%s", err, res.Stdout)
	}
	xruntest.Expect(t, xrun(t, time.Minute, "wait", id), 0)
	ps := xrun(t, time.Minute, "ps", "--all")
	xruntest.Expect(t, ps, 0)
	if !regexp.MustCompile(id + `\s+e2e-quick\s+succeeded\s.*` + regexp.QuoteMeta(host)).MatchString(ps.Stdout) {
		t.Errorf("ps --all does not list the job:\n%s", ps.Stdout)
	}
	// Its results and log are in the store: its directory on this
	// machine is gone, as an attached submit's container is.
	if left, _ := os.ReadDir(filepath.Join(dataDir, "xrun", "local")); len(left) != 0 {
		t.Errorf("the local job's directory is left: %v", left)
	}
}

// Ctrl-C stops the runner gracefully: partial results, status cancelled,
// exit 130, and no process left behind.
func TestRunLocalInterrupted(t *testing.T) {
	dir := fixture(t, "slow")
	cmd := exec.Command(xrunBin, "run", "--local", "--cpu", "--out", t.TempDir(), dir)
	cmd.Env = env()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var id, all string
	sc := bufio.NewScanner(stderr)
	deadline := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	for sc.Scan() {
		all += sc.Text() + "\n"
		if strings.Contains(sc.Text(), "ready in") {
			// The runner's workers are up: the job is in the store.
			for _, j := range x.Jobs(t) {
				if j.ExperimentDir == dir {
					id = j.ID
				}
			}
			break
		}
	}
	if id == "" {
		if strings.Contains(all, "numpy") {
			testenv.Missing(t, "no python3 with numpy on this machine (apt-get install python3-numpy): %s", all)
		}
		t.Fatalf("the run did not start:\n%s", all)
	}
	cmd.Process.Signal(syscall.SIGINT)
	for sc.Scan() {
		all += sc.Text() + "\n"
	}
	err = cmd.Wait()
	if cmd.ProcessState.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, all)
	}
	for _, want := range []string{"interrupted: stopping and removing process", "stopped and removed process"} {
		if !strings.Contains(all, want) {
			t.Errorf("stderr lacks %q:\n%s", want, all)
		}
	}
	st := xruntest.DecodeStatus(t, xrun(t, time.Minute, "status", "--json", id))
	if st.Status != "cancelled" {
		t.Errorf("status after Ctrl-C: %+v", st)
	}
	if out, _ := exec.Command("pgrep", "-f", "__run-local.*"+id).Output(); len(out) > 0 {
		t.Errorf("the runner outlived Ctrl-C: pids %s", out)
	}
}

// hostileFixture copies the hostile experiment name and tells it where the
// run's output is (out.txt).
func hostileFixture(t *testing.T, name, out string) string {
	t.Helper()
	dir := fixture(t, filepath.Join("hostile", name))
	if err := os.WriteFile(filepath.Join(dir, "out.txt"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// An implementation's daemon, in a session of its own, waits for the
// runner's final results.json and rewrites it: it is killed before the
// results are final, and the store, the history and --out keep the
// runner's results.
func TestRunLocalDaemonCannotForge(t *testing.T) {
	out := t.TempDir()
	dir := hostileFixture(t, "localforge", out)
	r, id := x.Submitted(t, dir, func() xruntest.Result {
		return xrun(t, 3*time.Minute, "run", "--local", "--cpu", "--out", out, dir)
	})
	xruntest.Expect(t, r, 0, "status: succeeded")
	pidText, err := os.ReadFile(filepath.Join(dir, "daemon.pid"))
	if err != nil {
		t.Fatalf("the daemon never started: %v\n%s", err, r.Stderr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(pidText)))
	if pid > 0 && syscall.Kill(pid, 0) == nil {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the daemon (pid %d) outlived the job", pid)
	}
	for _, path := range []string{filepath.Join(out, "results.json"), filepath.Join(x.Status(t, id).StoreDir, "results.json")} {
		rs, err := result.ReadFile(path)
		if err != nil || rs.Experiment != "e2e-localforge" {
			t.Errorf("%s: %v, experiment %q", path, err, rs.Experiment)
		}
	}
	rs := x.Results(t, id)
	if !strings.Contains(strings.Join(warnings(rs), "\n"), "outlived their workers and were killed") {
		t.Errorf("results.json does not say a process was killed: %v", warnings(rs))
	}
}

func warnings(rs *result.Results) []string {
	var out []string
	for _, w := range rs.Warnings {
		out = append(out, w.Message)
	}
	return out
}

// --out that is a link (to another disk, say): the run writes through it
// and its results are the job's, not "failed, exit code 0". A link inside
// --out is refused before anything runs, and what it points at is left
// alone.
func TestRunLocalOutLinks(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "out")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	dir := fixture(t, "quick")
	r, id := x.Submitted(t, dir, func() xruntest.Result {
		return xrun(t, 3*time.Minute, "run", "--local", "--cpu", "--out", link, dir)
	})
	xruntest.Expect(t, r, 0, "status: succeeded")
	if st := x.Status(t, id); st.Status != "succeeded" {
		t.Errorf("a linked --out: the job is %s", st.Status)
	}
	if _, err := os.Stat(filepath.Join(real, "results.json")); err != nil {
		t.Errorf("no results where the link points: %v", err)
	}

	victim := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(victim, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := os.Symlink(victim, filepath.Join(out, "results.md")); err != nil {
		t.Fatal(err)
	}
	r = xrun(t, time.Minute, "run", "--local", "--cpu", "--out", out, dir)
	xruntest.Expect(t, r, 3, "holds a symbolic link", "results.md")
	if b, _ := os.ReadFile(victim); string(b) != "mine\n" {
		t.Errorf("the link's target was written: %q", b)
	}
}

// regress --confirm reruns a suspect of a job of run --local on this
// machine, as it ran, and the rerun confirms it: exit 5 (it tried to
// submit to a Docker host named local://... and exited 0).
func TestRunLocalConfirm(t *testing.T) {
	dir := fixture(t, "drift")
	hist := filepath.Join(t.TempDir(), "history.db")
	run := func(slowdown string, args ...string) xruntest.Result {
		t.Helper()
		return x.RunEnv(t, 3*time.Minute, []string{"XRUN_HISTORY=" + hist, "DRIFT_SLOWDOWN=" + slowdown, "XRUN_HOST_BUSY_SHARE=off"}, args...)
	}
	local := func(slowdown string) string {
		t.Helper()
		var r xruntest.Result
		r, id := x.Submitted(t, dir, func() xruntest.Result {
			return run(slowdown, "run", "--local", "--cpu", "--out", t.TempDir(), dir)
		})
		// Its time criterion is declared to fail: exit 1.
		xruntest.Expect(t, r, 1)
		return id
	}
	rule := []string{"--min-history", "3", "--window", "10"}
	for i := 0; i < 4; i++ {
		local("1.00")
	}
	slow := local("1.25")
	r := run("1.25", append(append([]string{"regress"}, rule...), slow)...)
	xruntest.Expect(t, r, 0)
	if !strings.Contains(r.Stdout, " 1 suspect") {
		t.Fatalf("a 25 %% slower run is no suspect:\n%s\n%s", r.Stdout, r.Stderr)
	}
	r = run("1.25", append(append([]string{"regress", "--confirm"}, rule...), slow)...)
	xruntest.Expect(t, r, 5, "rerunning job "+slow, "confirmed regression")
	if !strings.Contains(r.Stdout, "regressed") {
		t.Errorf("after --confirm:\n%s", r.Stdout)
	}
}

// A job's results changed in the store after it ended are refused by
// every reader of the store that feeds the results history, as results
// and compare refuse them: the history's catch-up import (every history
// and regress), history import of the store's copy, and regress of the
// job; each exits 4 with the one sentence of store.TamperedError, and
// nothing of the changed copy reaches the history.
func TestTamperedStoreCopyNotImported(t *testing.T) {
	data := t.TempDir()
	y := &xruntest.Xrun{Bin: xrunBin, Env: func() []string { return append(env(), "XDG_DATA_HOME="+data, "XRUN_HISTORY=") }}
	dir := fixture(t, "quick")
	r, id := y.Submitted(t, dir, func() xruntest.Result {
		return y.Run(t, 3*time.Minute, "run", "--local", "--cpu", dir)
	})
	xruntest.Expect(t, r, 0)
	// The history as if it were made after the job ended (it imports
	// each job as it ends).
	hist := filepath.Join(data, "xrun", "history.db")
	for _, f := range []string{hist, hist + "-wal", hist + "-shm"} {
		os.Remove(f)
	}
	stored := filepath.Join(y.Status(t, id).StoreDir, result.FileName)
	b, err := os.ReadFile(stored)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stored, []byte(strings.Replace(string(b), `"e2e-quick"`, `"forged"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "the results of job " + id + " were changed after the job ended: the recorded copy, " + stored + ", no longer matches"
	for _, args := range [][]string{
		{"history"},
		{"regress", id},
		{"history", "import", filepath.Dir(stored)},
		{"history", "import", stored},
	} {
		got := y.Run(t, time.Minute, args...)
		if got.Code != 4 || !strings.Contains(got.Stderr, want) || strings.Count(strings.TrimSpace(got.Stderr), "\n") > 0 {
			t.Errorf("xrun %v on a changed store copy: exit %d, want 4 and one line with %q\nstderr:\n%s", args, got.Code, want, got.Stderr)
		}
		h, err := history.Open(hist)
		if err != nil {
			t.Fatal(err)
		}
		runs, err := h.RunsOfJob(id)
		h.Close()
		if err != nil || len(runs) != 0 {
			t.Fatalf("after xrun %v the history has %d runs of job %s (%v), want none", args, len(runs), id, err)
		}
	}
	// Restored, the copy is imported.
	if err := os.WriteFile(stored, b, 0o644); err != nil {
		t.Fatal(err)
	}
	xruntest.Expect(t, y.Run(t, time.Minute, "history", "e2e-quick"), 0)
}
