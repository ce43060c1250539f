package local

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
)

// superviseEnv makes the test binary the supervisor: Start runs it with
// the job's directory, as xrun runs itself with SuperviseArg.
const superviseEnv = "XRUN_LOCAL_TEST_SUPERVISOR"

func TestMain(m *testing.M) {
	if os.Getenv(superviseEnv) == "1" {
		os.Exit(Supervise(os.Args[len(os.Args)-1]))
	}
	os.Setenv(superviseEnv, "1")
	os.Exit(m.Run())
}

func newBackend(t *testing.T) *Backend {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &Backend{Root: filepath.Join(t.TempDir(), "local"), Host: "testbox", Supervisor: []string{exe}, Poll: 20 * time.Millisecond}
}

// create makes a job whose runner is the shell script script, with $OUT
// its output directory.
func create(t *testing.T, b *Backend, script string) (*store.Job, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	j := &store.Job{ID: store.NewID(), Experiment: "exp", Host: b.Where()}
	spec := backend.Spec{Name: "xrun-exp-" + j.ID, Command: []string{"/bin/sh", "-c", script}, Env: []string{"OUT=" + out}, OutDir: out}
	if err := b.Create(context.Background(), j, spec); err != nil {
		t.Fatal(err)
	}
	if j.ContainerID != j.ID || j.ContainerName != spec.Name {
		t.Fatalf("handle %q %q, want the id and the spec's name", j.ContainerID, j.ContainerName)
	}
	return j, out
}

func logsOf(t *testing.T, b *Backend, j *store.Job, o backend.LogOptions) string {
	t.Helper()
	var buf bytes.Buffer
	if err := b.Logs(context.Background(), j, o, &buf, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestRunToItsEnd(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	if got := b.Where(); got != "local://testbox" || !IsRef(got) {
		t.Fatalf("Where = %q", got)
	}
	j, _ := create(t, b, `echo one; echo two >&2; mkdir -p "$OUT/logs"; echo hi > "$OUT/logs/a.log"; echo '{}' > "$OUT/results.json"; echo three; exit 3`)
	s, err := b.State(ctx, j)
	if err != nil || s.Phase != backend.Pending || s.Detail != "created" {
		t.Fatalf("created: %+v, %v", s, err)
	}
	if err := b.Start(ctx, j); err != nil {
		t.Fatal(err)
	}
	if h := b.Handle(j); !strings.HasPrefix(h, "process ") {
		t.Errorf("Handle = %q", h)
	}
	s, err = b.Wait(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Finished() || s.ExitCode != 3 || s.StartedAt.IsZero() || s.FinishedAt.Before(s.StartedAt) || !s.Enforced {
		t.Fatalf("ended: %+v", s)
	}
	if got := logsOf(t, b, j, backend.LogOptions{}); got != "one\ntwo\nthree\n" {
		t.Errorf("logs = %q", got)
	}
	if got := logsOf(t, b, j, backend.LogOptions{Tail: "2"}); got != "two\nthree\n" {
		t.Errorf("logs --tail 2 = %q", got)
	}
	if got := logsOf(t, b, j, backend.LogOptions{Tail: "0"}); got != "" {
		t.Errorf("logs --tail 0 = %q", got)
	}
	rc, err := b.CopyOut(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		files[h.Name] = string(data)
	}
	rc.Close()
	if files["out/logs/a.log"] != "hi\n" || files["out/results.json"] != "{}\n" {
		t.Errorf("CopyOut: %q", files)
	}
	if l, _ := b.List(ctx, false); len(l) != 0 {
		t.Errorf("List without all: %+v", l)
	}
	l, err := b.List(ctx, true)
	if err != nil || len(l) != 1 || l[0].Job.ID != j.ID || l[0].Job.Experiment != "exp" || l[0].Job.Host != b.Where() || !l[0].State.Finished() {
		t.Fatalf("List all: %+v, %v", l, err)
	}
	if err := b.Remove(ctx, j, false); err != nil {
		t.Fatal(err)
	}
	if _, err := b.State(ctx, j); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("State after Remove: %v, want not found", err)
	}
	if err := b.Remove(ctx, j, false); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("second Remove: %v, want not found", err)
	}
}

func TestNoOutput(t *testing.T) {
	b := newBackend(t)
	j, _ := create(t, b, `exit 0`)
	if err := b.Start(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	b.Wait(context.Background(), j)
	if _, err := b.CopyOut(context.Background(), j); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("CopyOut of a runner that wrote nothing: %v", err)
	}
}

func TestStopIsGracefulThenKills(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	// One leaves on SIGTERM as the runner does (130 after cancelled
	// results), the other ignores it and is killed after the grace.
	polite, _ := create(t, b, `trap 'echo stopping; exit 130' TERM; echo up; while :; do sleep 0.05; done`)
	stubborn, _ := create(t, b, `trap '' TERM; echo up; while :; do sleep 0.05; done`)
	for _, j := range []*store.Job{polite, stubborn} {
		if err := b.Start(ctx, j); err != nil {
			t.Fatal(err)
		}
		if s, _ := b.State(ctx, j); s.Phase != backend.Running {
			t.Fatalf("started: %+v", s)
		}
	}
	// The shell must be in its loop, its trap set, before the signal.
	for _, j := range []*store.Job{polite, stubborn} {
		for !strings.Contains(logsOf(t, b, j, backend.LogOptions{}), "up") {
			time.Sleep(10 * time.Millisecond)
		}
	}
	start := time.Now()
	if err := b.Stop(ctx, polite, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	s, _ := b.State(ctx, polite)
	if !s.Finished() || s.ExitCode != 130 || time.Since(start) > 5*time.Second {
		t.Fatalf("stopped: %+v after %s", s, time.Since(start))
	}
	if got := logsOf(t, b, polite, backend.LogOptions{}); !strings.Contains(got, "stopping") {
		t.Errorf("the runner did not get SIGTERM: %q", got)
	}
	if err := b.Stop(ctx, stubborn, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	s, _ = b.State(ctx, stubborn)
	if !s.Finished() || s.ExitCode != 137 || !strings.Contains(s.Message, "signal 9") {
		t.Fatalf("killed: %+v", s)
	}
}

func TestRemoveForceKills(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	j, _ := create(t, b, `while :; do sleep 0.05; done`)
	if err := b.Start(ctx, j); err != nil {
		t.Fatal(err)
	}
	st, err := readStarted(b.dir(j))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Remove(ctx, j, false); err == nil {
		t.Fatal("Remove of a running job without force succeeded")
	}
	if err := b.Remove(ctx, j, true); err != nil {
		t.Fatal(err)
	}
	if alive(st.Runner, st.PID) {
		t.Fatal("the runner outlived Remove --force")
	}
}

func TestFollowLogsToTheEnd(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	j, _ := create(t, b, `for i in 1 2 3 4 5; do echo line $i; sleep 0.05; done`)
	if err := b.Start(ctx, j); err != nil {
		t.Fatal(err)
	}
	got := logsOf(t, b, j, backend.LogOptions{Follow: true})
	if got != "line 1\nline 2\nline 3\nline 4\nline 5\n" {
		t.Fatalf("followed logs = %q", got)
	}
	s, _ := b.State(ctx, j)
	if !s.Finished() {
		t.Fatalf("Logs -f returned before the end: %+v", s)
	}
	// A cancelled follow returns with ctx.
	j2, _ := create(t, b, `sleep 5`)
	if err := b.Start(ctx, j2); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := b.Logs(cctx, j2, backend.LogOptions{Follow: true}, io.Discard, io.Discard); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled follow: %v", err)
	}
	b.Remove(ctx, j2, true)
}

func TestRunnerThatCannotStart(t *testing.T) {
	b := newBackend(t)
	out := t.TempDir()
	j := &store.Job{ID: store.NewID()}
	if err := b.Create(context.Background(), j, backend.Spec{Command: []string{"/nonexistent/runner"}, OutDir: out}); err != nil {
		t.Fatal(err)
	}
	err := b.Start(context.Background(), j)
	if err == nil || !strings.Contains(err.Error(), "did not start") {
		t.Fatalf("Start = %v", err)
	}
	s, _ := b.State(context.Background(), j)
	if !s.Finished() || s.ExitCode != exitNoStart {
		t.Fatalf("state: %+v", s)
	}
}

// A runner and supervisor that both ended without a word (killed
// together, a restart) is an exited job that says so, not a running one.
func TestLostJob(t *testing.T) {
	b := newBackend(t)
	j, _ := create(t, b, `true`)
	dir := b.dir(j)
	if err := writeJSON(dir, startedFile, started{PID: 1 << 30, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	s, err := b.State(context.Background(), j)
	if err != nil || !s.Finished() || s.Detail != "lost" || !strings.Contains(s.Message, "without recording an exit code") {
		t.Fatalf("state: %+v, %v", s, err)
	}
}

func TestHandleOutsideTheRoot(t *testing.T) {
	b := newBackend(t)
	for _, id := range []string{"", "..", "../x", "a/b"} {
		j := &store.Job{ID: "x", ContainerID: id}
		if _, err := b.State(context.Background(), j); !errors.Is(err, backend.ErrNotFound) {
			t.Errorf("State of handle %q: %v, want not found", id, err)
		}
	}
	if err := b.Create(context.Background(), &store.Job{ID: "../evil"}, backend.Spec{Command: []string{"true"}, OutDir: "/tmp"}); err == nil {
		t.Error("Create with an id that is a path succeeded")
	}
}

// A supervisor that records the runner's exit and ends between two looks
// of the state is read as exited, never as lost: which processes run is
// asked before the exit file is read.
func TestStateAsTheSupervisorEnds(t *testing.T) {
	dir := t.TempDir()
	if err := writeJSON(dir, startedFile, started{PID: 1 << 22, Runner: "runner-id", Supervisor: "supervisor-id", StartedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	running := true
	processAlive = func(string, int) bool {
		if running {
			// The supervisor records the exit and ends as it is asked.
			running = false
			if err := writeJSON(dir, exitFile, exited{ExitCode: 3, FinishedAt: time.Now().UTC()}); err != nil {
				t.Fatal(err)
			}
		}
		return false
	}
	t.Cleanup(func() { processAlive = alive })
	if s := stateOf(dir); s.Detail != "exited" || s.ExitCode != 3 {
		t.Errorf("state as the supervisor ends: %+v, want exited with code 3", s)
	}
}

// A daemon in a session of its own (setsid, out of the runner's process
// group), which the runner's tree leaves behind to rewrite the output: it
// is killed before the job's end is recorded, so that the output the
// client copies once the job ended is the runner's.
func TestDaemonDiesWithTheJob(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Fatal("setsid (util-linux) is needed")
	}
	ctx := context.Background()
	b := newBackend(t)
	pidFile := filepath.Join(t.TempDir(), "daemon.pid")
	// The daemon's parent (the subshell) ends at once: the daemon is an
	// orphan before the runner ends.
	j, out := create(t, b, `mkdir -p "$OUT"; echo '{"by":"runner"}' > "$OUT/results.json"
(setsid sh -c 'echo $$ > `+pidFile+`; while :; do sleep 0.05; echo forged > "$OUT/results.json.x"; done' &)
while [ ! -s `+pidFile+` ]; do sleep 0.01; done
exit 0`)
	if err := b.Start(ctx, j); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Wait(ctx, j); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if pid <= 0 {
		t.Fatalf("daemon pid %q", data)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the daemon (pid %d) outlived the job", pid)
	}
	// Nothing writes into the output any more.
	os.Remove(filepath.Join(out, "results.json.x"))
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(out, "results.json.x")); err == nil {
		t.Error("something still writes into the output directory after the job ended")
	}
	if got := logsOf(t, b, j, backend.LogOptions{}); !strings.Contains(got, "process(es) the job left running after its runner ended") {
		t.Errorf("the log does not say what was killed:\n%s", got)
	}
}
