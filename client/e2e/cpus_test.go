//go:build integration

package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
)

// A job that reserves a CPU (resources.cpus) is the only job on it: a
// neighbour that keeps every CPU busy, started first on all of them, is
// moved off the reserved one as the job starts, and the job's timings see
// no one else's work (issue 33: a second user's job cannot slow the
// first's).
func TestReservedCPUIsTheJobsAlone(t *testing.T) {
	ctx := context.Background()
	info, err := eng.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.CPUs < 2 {
		t.Fatalf("the daemon has %d CPU: reserving one beside a neighbour needs 2", info.CPUs)
	}
	last := info.CPUs - 1

	// The neighbour: no reservation, so every CPU, spinning on all.
	r := submit(t, 5*time.Minute, "cpuhog", "-d")
	expect(t, r, 0)
	hog := strings.TrimSpace(r.Stdout)
	t.Cleanup(func() { x.Run(t, 2*time.Minute, "cancel", hog) })
	waitRunning(t, hog)
	if c := jobContainer(t, hog); c.CPUSet != "" {
		t.Fatalf("the neighbour runs on CPUs %q before anyone reserved one, want all", c.CPUSet)
	}
	waitSpinning(t, hog, 2*info.CPUs)

	// The job reserves the highest CPU; the neighbour moves off it.
	r, id := submitted(t, 5*time.Minute, "cpus")
	expect(t, r, 0, "gets CPU "+strconv.Itoa(last)+" of "+strconv.Itoa(info.CPUs))
	if c := jobContainer(t, hog); c.CPUSet != "0-"+strconv.Itoa(last-1) && !(last == 1 && c.CPUSet == "0") {
		t.Errorf("the neighbour runs on CPUs %q while the job holds %d", c.CPUSet, last)
	}
	if st := x.Run(t, time.Minute, "status", id); !strings.Contains(st.Stdout, "cpus") || !strings.Contains(st.Stdout, strconv.Itoa(last)) {
		t.Errorf("status does not say the job's CPUs:\n%s", st.Stdout)
	}
	res := x.Results(t, id)
	hl := res.Env.HostLoad
	if hl == nil || hl.Timings == 0 {
		t.Fatalf("results.json has no host load: %+v", res.Env)
	}
	if hl.CPUs != 1 {
		t.Errorf("the job could use %d CPUs, want its 1", hl.CPUs)
	}
	// The kernel keeps the neighbour's spinners off the job's CPU; what
	// other processes of the machine did there is the job's host load
	// (docs/regressions.md has the figures with and without).
	t.Logf("others used %.2f of the job's CPU at most (median %.2f)", hl.MaxOthersShare, hl.MedianOthersShare)
	// Its reservation ended with it: the next job gets the CPU again.
	if cs, err := eng.List(ctx, map[string]string{"dev.xrun.cpu-reservation": ""}, true); err != nil || len(cs) != 0 {
		t.Errorf("reservations left after the job: %d (%v)", len(cs), err)
	}
}

// jobContainer is job id's one container, inspected.
func jobContainer(t *testing.T, id string) engine.Container {
	t.Helper()
	cs := jobContainers(t, id)
	if len(cs) != 1 {
		t.Fatalf("job %s has %d containers", id, len(cs))
	}
	full, err := eng.Inspect(context.Background(), cs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return full
}

// waitSpinning polls until the neighbour's n spinners run (xrun exec).
func waitSpinning(t *testing.T, id string, n int) {
	t.Helper()
	count := `import os
print(sum(1 for p in os.listdir("/proc") if p.isdigit() and "time.time() - t < 60" in open("/proc/%s/cmdline" % p).read()))`
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		r := x.Run(t, time.Minute, "exec", id, "--", "python3", "-c", count)
		if got, err := strconv.Atoi(strings.TrimSpace(r.Stdout)); err == nil && got >= n {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("the neighbour's %d spinners never ran", n)
}
