//go:build integration

package e2e

import (
	"strings"
	"testing"
	"time"
)

// xrunIn runs the binary like x.Run, with XDG_DATA_HOME=data: another
// machine's (or user's) job store.
func xrunIn(t *testing.T, data string, limit time.Duration, args ...string) res {
	t.Helper()
	saved := dataDir
	dataDir = data
	defer func() { dataDir = saved }()
	return x.Run(t, limit, args...)
}

// Every row ps shows can be given to rm, including a job whose container
// ps found on the host but whose record is in another store; status, logs
// and results find such a job on the host too, and record it.
func TestRmJobListedByPsWithoutRecord(t *testing.T) {
	r := submit(t, 5*time.Minute, "quick", "-d")
	expect(t, r, 0)
	id := strings.TrimSpace(r.Stdout)
	expect(t, x.Run(t, 3*time.Minute, "wait", id), 0)

	other := t.TempDir()
	ps := xrunIn(t, other, time.Minute, "ps", "--all")
	expect(t, ps, 0)
	if !strings.Contains(ps.Stdout, id) {
		t.Fatalf("ps --all from another store lacks %s:\n%s", id, ps.Stdout)
	}
	rm := xrunIn(t, other, time.Minute, "rm", id[:8])
	expect(t, rm, 0)
	if strings.TrimSpace(rm.Stdout) != id {
		t.Errorf("rm printed %q, want %s", rm.Stdout, id)
	}
	if cs := jobContainers(t, id); len(cs) != 0 {
		t.Errorf("rm left %d containers", len(cs))
	}

	// The same from a third store, which follows the job before removing it.
	r = submit(t, 5*time.Minute, "quick", "-d")
	expect(t, r, 0)
	id = strings.TrimSpace(r.Stdout)
	expect(t, x.Run(t, 3*time.Minute, "wait", id), 0)
	third := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"status", id[:8]}, "succeeded"},
		{[]string{"logs", id}, "loop"},
		{[]string{"results", "--json", id}, `"experiment": "e2e-quick"`},
	} {
		r := xrunIn(t, third, time.Minute, c.args...)
		expect(t, r, 0)
		if !strings.Contains(r.Stdout, c.want) {
			t.Errorf("xrun %v from another store: stdout lacks %q:\n%s", c.args, c.want, r.Stdout)
		}
	}
	expect(t, xrunIn(t, third, time.Minute, "status", "0000deadbeef"), 3, " either")
	rm = xrunIn(t, third, time.Minute, "rm", id)
	expect(t, rm, 0)
	if cs := jobContainers(t, id); len(cs) != 0 {
		t.Errorf("rm left %d containers", len(cs))
	}
	expect(t, xrunIn(t, other, time.Minute, "rm", "0000deadbeef"), 3, `no job "0000deadbeef"`)
	// The submitting store still has its record, results included.
	expect(t, x.Run(t, time.Minute, "results", id), 0)
	expect(t, x.Run(t, time.Minute, "rm", id), 0)
}
