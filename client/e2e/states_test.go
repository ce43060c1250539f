//go:build integration

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/internal/testenv"

	"github.com/xrun-dev/xrun/client/backend/dockerhost"
	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/result"
)

// ps, status, wait and cancel agree on a job in each of the states that
// once made them disagree: another store's failed or cancelled job, a
// store that cannot be written or is full, a submit killed before it
// started its job, a daemon that restarts under a running job.

// requireRoot fails (under CI=true) or skips a test that makes a store
// unwritable (chattr) or full (a tmpfs): as root, permissions alone do
// neither.
func requireRoot(t *testing.T) { t.Helper(); testenv.Root(t, "chattr, mount") }

// psAll is what `ps --all --json` lists with the store data, by job id.
func psAll(t *testing.T, data string) map[string]xruntest.Job {
	t.Helper()
	r := xrunIn(t, data, time.Minute, "ps", "--all", "--json")
	out := map[string]xruntest.Job{}
	for _, j := range xruntest.DecodeJobs(t, r) {
		out[j.ID] = j
	}
	return out
}

// Another store lists this store's failed and cancelled jobs with their
// exit codes and statuses, not as succeeded 0.
func TestPsShowsOtherStoresExitCodes(t *testing.T) {
	failed := xruntest.JobID(t, submit(t, 5*time.Minute, "fail", "--keep", "--json"))
	r := submit(t, 5*time.Minute, "slow", "-d")
	expect(t, r, 0)
	cancelled := strings.TrimSpace(r.Stdout)
	waitRunning(t, cancelled)
	expect(t, x.Run(t, time.Minute, "cancel", cancelled), 0, "cancelled job "+cancelled)
	other := t.TempDir()
	rows := psAll(t, other)
	for id, want := range map[string]struct {
		status string
		code   int
	}{failed: {result.StatusFailed, 2}, cancelled: {result.StatusCancelled, 130}} {
		got, ok := rows[id]
		if !ok || got.Status != want.status || got.ExitCode == nil || *got.ExitCode != want.code {
			t.Errorf("another store's ps lists %s as %+v, want %s with exit code %d", id, got, want.status, want.code)
		}
		if mine := psAll(t, dataDir)[id]; mine.Status != want.status {
			t.Errorf("this store's ps says %s for %s, want %s", mine.Status, id, want.status)
		}
	}
}

// chattr sets or clears the immutable flag of dir: nothing in it can then
// be created, renamed or removed, root or not.
func chattr(t *testing.T, flag, dir string) {
	t.Helper()
	if out, err := exec.Command("chattr", flag, dir).CombinedOutput(); err != nil {
		t.Fatalf("chattr %s %s: %v: %s", flag, dir, err, out)
	}
}

// A cancel whose record cannot be saved still stops the job, and says
// that it could not record it; the next look records how it ended.
func TestCancelWithAnUnwritableStore(t *testing.T) {
	requireRoot(t)
	r := submit(t, 5*time.Minute, "slow", "-d")
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	waitRunning(t, id)
	dir := filepath.Join(dataDir, "xrun", "jobs", id)
	chattr(t, "+i", dir)
	defer chattr(t, "-i", dir)
	c := x.Run(t, 2*time.Minute, "cancel", id)
	expect(t, c, 4, "was cancelled, but its record could not be saved")
	deadline := time.Now().Add(30 * time.Second)
	for {
		cs := jobContainers(t, id)
		if len(cs) == 1 && cs[0].State == "exited" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job still runs after a cancel that could not be recorded: %+v", cs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	chattr(t, "-i", dir)
	s := x.Status(t, id)
	if s.Status != result.StatusCancelled || !strings.Contains(s.Error, "a cancel whose record could not be saved") {
		logs, _ := os.ReadFile(filepath.Join(s.StoreDir, "logs.txt"))
		rec, _ := os.ReadFile(filepath.Join(s.StoreDir, "job.json"))
		t.Errorf("status after the store is writable again: %s (%s); the job's log:\n%s\nrecord:\n%s", s.Status, s.Error, logs, rec)
	}
	if row := psAll(t, dataDir)[id]; row.Status != s.Status {
		t.Errorf("ps says %s, status %s", row.Status, s.Status)
	}
	w := x.Run(t, time.Minute, "wait", id)
	if w.Code != 130 || strings.TrimSpace(w.Stdout) != result.StatusCancelled {
		t.Errorf("wait: exit %d, %q", w.Code, w.Stdout)
	}
}

// A store whose disk is full keeps the job unfinished (ps and status say
// unknown, with why), wait says the disk is full and exits 4, and once
// there is room the results come as if nothing happened.
func TestFullStore(t *testing.T) {
	requireRoot(t)
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", data).CombinedOutput(); err != nil {
		t.Fatalf("mount a small tmpfs for the store: %v: %s", err, out)
	}
	defer exec.Command("umount", "-l", data).Run()
	r := xrunIn(t, data, 5*time.Minute, "submit", "-d", "--cpu", "--base", Base, "--label", labelArg, fixturePath("quick"))
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	// Fill the disk to the last byte.
	filler := filepath.Join(data, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	block := bytes.Repeat([]byte{'x'}, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	for {
		if _, err := f.Write([]byte{'x'}); err != nil {
			break
		}
	}
	f.Close()
	w := xrunIn(t, data, 3*time.Minute, "wait", id)
	expect(t, w, 4, "the job store's disk is full", "then run `xrun status "+id)
	st := xruntestStatus(t, xrunIn(t, data, time.Minute, "status", "--json", id))
	if st.Status != "unknown" || !strings.Contains(st.Error, "disk is full") {
		t.Errorf("status on a full store: %s (%s)", st.Status, st.Error)
	}
	if row := psAll(t, data)[id]; row.Status != "unknown" {
		t.Errorf("ps says %s, status %s", row.Status, st.Status)
	}
	entries, _ := os.ReadDir(filepath.Join(data, "xrun", "jobs", id))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("a partial copy was left in the store: %s", e.Name())
		}
	}
	os.Remove(filler)
	expect(t, xrunIn(t, data, 3*time.Minute, "wait", id), 0)
	res := xrunIn(t, data, time.Minute, "results", "--json", id)
	expect(t, res, 0)
	if rs, err := result.Decode([]byte(res.Stdout)); err != nil || !rs.Success || len(rs.Cases) != 2 {
		t.Errorf("results after the disk had room again: %v %+v", err, rs)
	}
	xrunIn(t, data, time.Minute, "rm", id)
}

func xruntestStatus(t *testing.T, r res) struct{ Status, Error string } {
	t.Helper()
	var s struct{ Status, Error string }
	if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil {
		t.Fatalf("status --json: exit %d: %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
	}
	return s
}

// A submit killed (SIGKILL) while it copies the code leaves a container
// that will never start: wait, cancel, status and ps record it as
// cancelled, say why, and its container goes.
func TestSubmitKilledDuringTheCodeCopy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "big")
	if err := os.CopyFS(dir, os.DirFS(fixturePath("quick"))); err != nil {
		t.Fatal(err)
	}
	// A name of its own, so that no other job's container is taken for it.
	name := "e2e-killed-" + randomHex(t)
	spec, err := os.ReadFile(filepath.Join(dir, "xrun.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	spec = bytes.Replace(spec, []byte("name: e2e-quick"), []byte("name: "+name), 1)
	if err := os.WriteFile(filepath.Join(dir, "xrun.yaml"), spec, 0o644); err != nil {
		t.Fatal(err)
	}
	// Enough code that the copy takes a while.
	blob := make([]byte, 256<<20)
	for i := range blob {
		blob[i] = byte(i * 7919 >> 3)
	}
	if err := os.WriteFile(filepath.Join(dir, "weights.bin"), blob, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, xrunBin, "submit", "--cpu", "--base", Base, "--label", labelArg, dir)
	cmd.Env = env()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it the moment the job's container exists, before it starts.
	var id string
	deadline := time.Now().Add(4 * time.Minute)
	for id == "" {
		if time.Now().After(deadline) {
			t.Fatal("no container of the job appeared")
		}
		cs, _ := eng.List(ctx, map[string]string{"dev.xrun.experiment": name}, true)
		for _, c := range cs {
			if c.State == "created" && c.Labels["dev.xrun.job"] != "" {
				id = c.Labels["dev.xrun.job"]
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	rec, err := os.ReadFile(filepath.Join(dataDir, "xrun", "jobs", id, "job.json"))
	var j store.Job
	if err != nil || json.Unmarshal(rec, &j) != nil || j.Status != store.StatusCreated {
		t.Fatalf("the killed submit left no record of job %s in its created state: %v %s", id, err, rec)
	}
	w := x.Run(t, time.Minute, "wait", id)
	expect(t, w, 130, "never started: the xrun that submitted it")
	if cs := jobContainers(t, id); len(cs) != 0 {
		t.Errorf("the never-started container is still there: %+v", cs)
	}
	s := x.Status(t, id)
	if s.Status != result.StatusCancelled || !strings.Contains(s.Error, "never started") {
		t.Errorf("status %s (%s)", s.Status, s.Error)
	}
	if row := psAll(t, dataDir)[id]; row.Status != result.StatusCancelled {
		t.Errorf("ps says %s", row.Status)
	}
	expect(t, x.Run(t, time.Minute, "cancel", id), 0, "already ended (cancelled)")
}

// rm -f of an unreadable record looks for the job's container on the host
// --host names, not on the default one.
func TestRmUnreadableRecordOnNamedHost(t *testing.T) {
	r := submit(t, 5*time.Minute, "slow", "-d")
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	path := filepath.Join(dataDir, "xrun", "jobs", id, "job.json")
	if err := os.WriteFile(path, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The default host answers nowhere: only --host can find the container.
	rm := runIn(t, []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, "rm", "-f", "--host", eng.Host(), id)
	expect(t, rm, 0)
	if cs := jobContainers(t, id); len(cs) != 0 {
		t.Errorf("rm -f --host %s left the job's container: %+v", eng.Host(), cs)
	}
}

// runIn runs xrun with extra environment variables.
func runIn(t *testing.T, extra []string, args ...string) res {
	t.Helper()
	return x.RunEnv(t, time.Minute, extra, args...)
}

// A daemon that restarts under a running job: while it is down, status
// and ps say unknown and wait waits; once it is back, the job is recorded
// as stopped from outside xrun, not as a user's cancel.
func TestDaemonRestartUnderARunningJob(t *testing.T) {
	d := testenv.StartDaemon(t)
	base := testenv.EnsureBusybox(t, d.Socket)
	r := x.Run(t, 5*time.Minute, "submit", "-d", "--cpu", "--host", d.Socket, "--base", base, fixturePath("setupsleep"))
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	// Running, and in its setup: the runner has set itself up.
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(x.Run(t, time.Minute, "logs", id).Stdout, "setup: sleep 300") {
		if time.Now().After(deadline) {
			t.Fatalf("job %s did not reach its setup on the test daemon", id)
		}
		time.Sleep(300 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	wait := exec.CommandContext(ctx, xrunBin, "wait", id)
	wait.Env = env()
	var wout, werr xruntest.LockedBuffer
	wait.Stdout, wait.Stderr = &wout, &werr
	if err := wait.Start(); err != nil {
		t.Fatal(err)
	}
	d.Stop(t)
	if s := x.Status(t, id); s.Status != store.StatusUnknown {
		t.Errorf("status while the daemon is down: %s (%s), want unknown", s.Status, s.Error)
	}
	if row := psAll(t, dataDir)[id]; row.Status != store.StatusUnknown {
		t.Errorf("ps while the daemon is down: %s, want unknown", row.Status)
	}
	time.Sleep(3 * time.Second)
	if wait.ProcessState != nil {
		t.Fatalf("wait gave up while the daemon was down: %s", werr.String())
	}
	d.Restart(t)
	err := wait.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	if code != 130 || !strings.Contains(werr.String(), "waiting for it to come back") {
		t.Errorf("wait: exit %d\nstdout: %s\nstderr: %s", code, wout.String(), werr.String())
	}
	s := x.Status(t, id)
	if s.Status != result.StatusCancelled || s.Error != dockerhost.Capabilities.StoppedOutside() {
		logs, _ := os.ReadFile(filepath.Join(s.StoreDir, "logs.txt"))
		state, _ := exec.Command("docker", "-H", d.Socket, "inspect", "--format", "{{json .State}}", "xrun-e2e-setup-sleep-"+id).CombinedOutput()
		t.Errorf("after the restart: %s (%s), want cancelled, stopped from outside xrun; the job's log:\n%s\ncontainer state: %s\ndaemon log:\n%s", s.Status, s.Error, logs, state, d.Log())
	}
}
