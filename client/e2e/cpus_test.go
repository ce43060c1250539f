//go:build integration

package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/internal/testenv"
)

// A job that reserves a CPU (resources.cpus) is the only job on it (issue
// 33: a second user's job cannot slow the first's), and takes none that a
// running job is on (issue 47: a second user's reservation cannot slow the
// first's job either): a second user's neighbour that keeps every CPU
// busy, started first on all of them, keeps them, and the reservation
// waits for it with --queue. Both run on a daemon of their own that both
// users may use.
func TestReservedCPUIsTheJobsAlone(t *testing.T) {
	d, e, _ := sharedDaemon(t)
	o := asOther(t)
	ctx := context.Background()
	info, err := e.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.CPUs < 2 {
		t.Fatalf("the daemon has %d CPU: reserving one beside a neighbour needs 2", info.CPUs)
	}
	last := info.CPUs - 1
	testenv.CopyImage(t, Base, eng.Host(), d.Socket)

	// The other user's neighbour: no reservation, so every CPU, spinning
	// on all of them.
	hogDir := filepath.Join(o.home, "cpuhog")
	if out, err := exec.Command("cp", "-r", fixturePath("cpuhog"), hogDir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if out, err := exec.Command("chown", "-R", strconv.Itoa(int(o.uid))+":"+strconv.Itoa(int(o.gid)), hogDir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	r := o.run(t, 5*time.Minute, "submit", "--host", d.Socket, "--cpu", "--base", Base, "-d", "-q", hogDir)
	expect(t, r, 0)
	hog := strings.TrimSpace(r.Stdout)
	t.Cleanup(func() { o.run(t, 2*time.Minute, "cancel", hog) })
	if c := inspectJob(t, e, hog); c.CPUSet != "" {
		t.Fatalf("the neighbour runs on CPUs %q before anyone reserved one, want all", c.CPUSet)
	}
	waitSpinning(t, o, hog, 2*info.CPUs)

	// This user's job asks for a CPU the neighbour runs on: without
	// --queue it is refused and names the neighbour, which keeps every CPU.
	r = x.Run(t, 5*time.Minute, "submit", "--host", d.Socket, "--cpu", "--base", Base, fixturePath("cpus"))
	if r.Code == 0 || !strings.Contains(r.Stderr, "by job "+hog) || !strings.Contains(r.Stderr, "--queue") {
		t.Fatalf("a reservation of the CPUs the neighbour runs on: exit %d\n%s", r.Code, r.Stderr)
	}
	if c := inspectJob(t, e, hog); c.CPUSet != "" {
		t.Fatalf("the neighbour was moved onto CPUs %q", c.CPUSet)
	}
	// With --queue it waits for the neighbour to end (its spinners stop
	// after a minute), then reserves the highest CPU; the neighbour ran on
	// every CPU to its end (issue 47: a running job's CPUs never change).
	r, id := x.Submitted(t, fixturePath("cpus"), func() res {
		return x.Run(t, 5*time.Minute, "submit", "--host", d.Socket, "--cpu", "--base", Base, "--queue", fixturePath("cpus"))
	})
	expect(t, r, 0, "queued on", "gets CPU "+strconv.Itoa(last)+" of "+strconv.Itoa(info.CPUs))
	if cs, err := e.List(ctx, map[string]string{"dev.xrun.job": hog}, true); err == nil && len(cs) == 1 {
		if c, err := e.Inspect(ctx, cs[0].ID); err == nil && c.CPUSet != "" {
			t.Errorf("the neighbour (%s) ended on CPUs %q, want every CPU", c.State, c.CPUSet)
		}
	}
	if st := x.Run(t, time.Minute, "status", id); !strings.Contains(st.Stdout, "cpus") || !strings.Contains(st.Stdout, strconv.Itoa(last)) {
		t.Errorf("status does not say the job's CPUs:\n%s", st.Stdout)
	}
	hl := x.Results(t, id).Env.HostLoad
	if hl == nil || hl.Timings == 0 {
		t.Fatal("results.json has no host load")
	}
	if hl.CPUs != 1 {
		t.Errorf("the job could use %d CPUs, want its 1", hl.CPUs)
	}
	// What other processes of the machine did on the job's CPU is its host
	// load (docs/hosts.md has figures with and without the reservation).
	t.Logf("others used %.2f of the job's CPU at most (median %.2f)", hl.MaxOthersShare, hl.MedianOthersShare)
	// Its reservation ended with it.
	if cs, err := e.List(ctx, map[string]string{"dev.xrun.cpu-reservation": ""}, true); err != nil || len(cs) != 0 {
		t.Errorf("reservations left after the job: %d (%v)", len(cs), err)
	}
}

// inspectJob is job id's one container on e, inspected.
func inspectJob(t *testing.T, e engine.Engine, id string) engine.Container {
	t.Helper()
	cs, err := e.List(context.Background(), map[string]string{"dev.xrun.job": id}, true)
	if err != nil || len(cs) != 1 {
		t.Fatalf("job %s has %d containers (%v)", id, len(cs), err)
	}
	full, err := e.Inspect(context.Background(), cs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return full
}

// waitSpinning polls, as the other user, until the neighbour's n spinners
// run (xrun exec).
func waitSpinning(t *testing.T, o *other, id string, n int) {
	t.Helper()
	count := `import os
print(sum(1 for p in os.listdir("/proc") if p.isdigit() and "time.time() - t < 60" in open("/proc/%s/cmdline" % p).read()))`
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		r := o.run(t, time.Minute, "exec", id, "--", "python3", "-c", count)
		if got, err := strconv.Atoi(strings.TrimSpace(r.Stdout)); err == nil && got >= n {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("the neighbour's %d spinners never ran", n)
}
