//go:build integration

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/contract"
)

// The Low items of a shared box, second pass (issue 47): CPU reservations
// of many submits at once, a detached job's reservation, and commands
// refused on another user's job, each with a second Unix user on a daemon
// both users share.

// giveFixture copies fixture into o's home, o's own, and returns its path.
func giveFixture(t *testing.T, o *other, fixture string) string {
	t.Helper()
	dir := filepath.Join(o.home, fixture)
	if out, err := exec.Command("cp", "-r", fixturePath(fixture), dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if out, err := exec.Command("chown", "-R", strconv.Itoa(int(o.uid))+":"+strconv.Itoa(int(o.gid)), dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return dir
}

// command is xrun with args, as this suite's user or, with o, as the
// other user, for a goroutine (it fails no test itself).
func command(ctx context.Context, o *other, args ...string) *exec.Cmd {
	if o == nil {
		cmd := exec.CommandContext(ctx, xrunBin, args...)
		cmd.Env = env()
		return cmd
	}
	cmd := exec.CommandContext(ctx, o.bin, args...)
	cmd.Dir = o.home
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + o.home, "USER=" + otherUser, "XDG_DATA_HOME=" + filepath.Join(o.home, "data"),
		"XRUN_HOST=", "XRUN_CONTEXT=", "XRUN_NO_STANDBY=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: o.uid, Gid: o.gid}}
	return cmd
}

// Issue 47, item 2, done when: 20 submits at once, half of them by a
// second user, 14 of `--cpus 1 --queue` and 6 of the pool's (`--queue`
// alone), all succeed (4 of 6 failed with exit 4, "container is marked for
// removal"), and no two running jobs share a reserved CPU: each reserved
// job runs on the CPU its own reservation holds, which no running pool job
// is on.
func TestHostileQueuedReservationsAllRun(t *testing.T) {
	d, e, bb := sharedDaemon(t)
	o := asOther(t)
	ctx := context.Background()
	info, err := e.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := info.CPUs
	mine, theirs := fixturePath("cpuqueue"), giveFixture(t, o, "cpuqueue")
	args := func(dir string, reserve bool) []string {
		a := []string{"submit", "--host", d.Socket, "--cpu", "--base", bb, "--label", labelArg, "--queue", "-q"}
		if reserve {
			a = append(a, "--cpus", "1")
		}
		return append(a, dir)
	}
	// One submit of each user first: the images the others use.
	expect(t, x.Run(t, 5*time.Minute, args(mine, true)...), 0)
	expect(t, o.run(t, 5*time.Minute, args(theirs, true)...), 0)

	stop := make(chan struct{})
	monErr := make(chan error, 1)
	var peak, looks int
	go func() {
		defer close(monErr)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if err := reservedApart(ctx, e, n, &peak); err != nil {
				monErr <- err
				return
			}
			looks++
		}
	}()

	const jobs = 20
	var wg sync.WaitGroup
	errs := make(chan error, jobs)
	start := time.Now()
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
			defer cancel()
			who, dir, user := (*other)(nil), mine, "root"
			if i%2 == 1 {
				who, dir, user = o, theirs, otherUser
			}
			cmd := command(cctx, who, args(dir, i%10 < 7)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				errs <- fmt.Errorf("submit %d (%s): %v\n%s%s", i, user, err, stdout.String(), stderr.String())
			}
		}()
	}
	wg.Wait()
	close(stop)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := <-monErr; err != nil {
		t.Error(err)
	}
	if peak < 2 && n >= 2 {
		t.Errorf("at most %d reserved jobs ran at once on %d CPUs: the submits did not overlap", peak, n)
	}
	for _, l := range []string{gpus.LabelCPUReservation, gpus.LabelCPULock} {
		if left, err := e.List(ctx, map[string]string{l: ""}, true); err != nil || len(left) != 0 {
			t.Errorf("%d containers labelled %s left after the jobs (%v)", len(left), l, err)
		}
	}
	t.Logf("%d submits (14 of --cpus 1 --queue, 6 of the pool) by two users on %d CPUs in %s: at most %d reserved jobs running at once (%d looks)",
		jobs, n, time.Since(start).Round(time.Second), peak, looks)
}

// reservedApart looks once at the running xrun jobs of e: each that holds
// a reservation runs on one CPU, which its own reservation holds, and no
// two share one, nor does a running job of the pool. peak gets the most
// reserved jobs seen running at once.
func reservedApart(ctx context.Context, e engine.Engine, n int, peak *int) error {
	res, err := e.List(ctx, map[string]string{gpus.LabelCPUReservation: ""}, true)
	if err != nil {
		return nil // the daemon is busy; the next look counts
	}
	holder := map[int]string{}
	holds := map[string]bool{}
	for _, r := range res {
		cpu, _ := strconv.Atoi(r.Labels[gpus.LabelCPUReservation])
		holder[cpu] = r.Labels[gpus.LabelHolder]
		holds[r.Labels[gpus.LabelHolder]] = true
	}
	cs, err := e.List(ctx, map[string]string{contract.LabelJob: ""}, false)
	if err != nil {
		return nil
	}
	// One look inspects the containers one after another: what it finds
	// wrong is looked at again, so that a job that ended and its CPU's
	// next holder, seen at two moments, are not taken for two at once.
	stillRunning := func(id string) bool {
		c, err := e.Inspect(ctx, id)
		return err == nil && c.State == "running"
	}
	on := map[int]engine.Container{}
	var pool []engine.Container
	running := 0
	for _, c := range cs {
		full, err := e.Inspect(ctx, c.ID)
		if err != nil || full.State != "running" {
			continue // ended since the list
		}
		job := c.Labels[contract.LabelJob]
		if !holds[job] {
			pool = append(pool, full)
			continue
		}
		cpus, err := gpus.ParseCPUSet(full.CPUSet)
		if err != nil || len(cpus) != 1 {
			return fmt.Errorf("job %s runs on CPUs %q, want the one it reserved", job, full.CPUSet)
		}
		running++
		cpu := cpus[0]
		if other, dup := on[cpu]; dup && stillRunning(other.ID) && stillRunning(c.ID) {
			return fmt.Errorf("running jobs %s and %s share reserved CPU %d", other.Labels[contract.LabelJob], job, cpu)
		}
		on[cpu] = c
		if h, ok := holder[cpu]; ok && h != job {
			r, err := e.Inspect(ctx, gpus.CPUReservationName(cpu))
			if err == nil && r.Labels[gpus.LabelHolder] != job && stillRunning(c.ID) {
				return fmt.Errorf("job %s runs on CPU %d, which job %s holds", job, cpu, r.Labels[gpus.LabelHolder])
			}
		}
	}
	for _, p := range pool {
		cpus, err := gpus.ParseCPUSet(p.CPUSet)
		if err != nil || p.CPUSet == "" {
			cpus = nil
			for cpu := range n {
				cpus = append(cpus, cpu) // every CPU
			}
		}
		for _, cpu := range cpus {
			if r, ok := on[cpu]; ok && stillRunning(r.ID) && stillRunning(p.ID) {
				return fmt.Errorf("job %s of the pool runs on CPU %d, which running job %s reserved", p.Labels[contract.LabelJob], cpu, r.Labels[contract.LabelJob])
			}
		}
	}
	*peak = max(*peak, running)
	return nil
}

// Issue 47: a detached job's CPUs are free once it has ended, though no
// command of its user recorded the end (another user's reservation of
// every CPU gets them, without --queue), and the first command that
// records its end (ps) removes its reservation.
func TestHostileDetachedReservationFreed(t *testing.T) {
	d, e, bb := sharedDaemon(t)
	o := asOther(t)
	ctx := context.Background()
	info, err := e.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	theirs := giveFixture(t, o, "cpuqueue")
	detached := func() string {
		t.Helper()
		r := o.run(t, 5*time.Minute, "submit", "--host", d.Socket, "--cpu", "--base", bb, "--label", labelArg, "--cpus", "1", "-d", "-q", theirs)
		expect(t, r, 0)
		id := strings.TrimSpace(r.Stdout)
		deadline := time.Now().Add(3 * time.Minute)
		for !inspectJob(t, e, id).Finished() {
			if time.Now().After(deadline) {
				t.Fatalf("the detached job %s did not end", id)
			}
			time.Sleep(500 * time.Millisecond)
		}
		return id
	}
	held := func(id string) int {
		t.Helper()
		cs, err := e.List(ctx, map[string]string{gpus.LabelHolder: id}, true)
		if err != nil {
			t.Fatal(err)
		}
		return len(cs)
	}

	first := detached()
	if held(first) != 1 {
		t.Fatalf("the detached job %s has %d reservations before anyone recorded its end, want its 1", first, held(first))
	}
	r := x.Run(t, 5*time.Minute, "submit", "--host", d.Socket, "--cpu", "--base", bb, "--label", labelArg,
		"--cpus", strconv.Itoa(info.CPUs), fixturePath("cpuqueue"))
	expect(t, r, 0, "gets CPU "+gpus.AllCPUs(info.CPUs))

	second := detached()
	if held(second) != 1 {
		t.Fatalf("the detached job %s has %d reservations, want its 1", second, held(second))
	}
	expect(t, o.run(t, time.Minute, "ps", "--host", d.Socket), 0)
	if n := held(second); n != 0 {
		t.Errorf("ps recorded the end of job %s and left %d reservations of it", second, n)
	}
}

// Issue 47: cancel, exec and rm of another user's job that this store has
// no record of are refused (exit 3), and the refusal records nothing of
// the job here; the job runs on.
func TestHostileRefusedCommandsRecordNothing(t *testing.T) {
	d, e, bb := sharedDaemon(t)
	o := asOther(t)
	theirs := giveFixture(t, o, "setupsleep")
	r := o.run(t, 5*time.Minute, "submit", "--host", d.Socket, "--cpu", "--base", bb, "--label", labelArg, "-d", "-q", theirs)
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	t.Cleanup(func() { o.run(t, 2*time.Minute, "cancel", id) })
	for _, args := range [][]string{{"cancel", id}, {"exec", id, "--", "true"}, {"rm", id}} {
		w := x.Run(t, time.Minute, append([]string{args[0], "--host", d.Socket}, args[1:]...)...)
		if w.Code != 3 || !strings.Contains(w.Stderr, "not yours") {
			t.Errorf("xrun %s of %s's job: exit %d, want 3 saying it is not yours\n%s", strings.Join(args, " "), otherUser, w.Code, w.Stderr)
		}
		if found := storeHas(t, dataDir, id); len(found) > 0 {
			t.Fatalf("the refused %s recorded %s's job in this store: %v", args[0], otherUser, found)
		}
	}
	if c := inspectJob(t, e, id); c.State != "running" {
		t.Errorf("the other user's job is %s after the refused commands, want running", c.State)
	}
}

// Issue 47: history import on a full disk (a small tmpfs, as root) exits
// 4, the machine's trouble (it exited 3, as for a bad file), says to free
// space, and keeps the runs it had.
func TestHostileImportOnAFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("a full disk is a small tmpfs mounted for the test: it needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "xrun-e2e-full", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	extra := []string{"XRUN_HISTORY=" + filepath.Join(dir, "history.db"), "XDG_DATA_HOME=" + t.TempDir()}
	night := func(n int) string {
		return filepath.Join(repo, "experiments", "heavy-kernels", "results", "2026-12-02-h200", "nights", fmt.Sprintf("night-%02d", n), "results.json")
	}
	expect(t, x.RunEnv(t, time.Minute, extra, "history", "import", night(1)), 0)
	// All but 48 KiB of the disk taken.
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	filler, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for left := int64(st.Bavail)*st.Bsize - 48<<10; left > 0; left -= 64 << 10 {
		if _, err := filler.Write(make([]byte, min(left, 64<<10))); err != nil {
			t.Fatal(err)
		}
	}
	filler.Close()
	r := x.RunEnv(t, time.Minute, extra, "history", "import", night(2), night(3), night(4), night(5))
	expect(t, r, 4, "free space")
	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	r = x.RunEnv(t, time.Minute, extra, "history", "--csv")
	expect(t, r, 0)
	if !strings.Contains(r.Stdout, "run-20261202T031444") {
		t.Errorf("the run imported before the disk filled is gone:\n%.2000s", r.Stdout)
	}
}
