//go:build integration

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/result"
)

// The hostile experiments of issue 33 ("A shared GPU box"): an
// implementation that lies about its timings, or fails with a message made
// to hurt whoever keeps it, costs its own results alone, and what it sent
// is bounded and harmless wherever xrun keeps or prints it.

// Two implementations report their own timings through the harness's host
// sampler, 1e300 ms and 1e-300 ms a call: each is refused on every case
// with an error saying why, and the honest one's results are written (the
// +Inf throughput of the tiny one made results.json unwritable, and every
// implementation not_run: the runner died).
func TestHostileLiar(t *testing.T) {
	r, s, rs := hostileJob(t, "liar", 2)
	if rs.Status != result.StatusFailed || len(rs.Cases) != 2 {
		t.Fatalf("status %s, %d cases", rs.Status, len(rs.Cases))
	}
	for _, c := range rs.Cases {
		if h := c.Results["honest"]; h == nil || h.Status != result.ImplOK || h.Timing == nil {
			t.Errorf("honest at %s: %+v", c.Label, h)
		}
		for _, name := range []string{"huge", "tiny"} {
			ir := c.Results[name]
			if ir == nil || ir.Status != result.ImplError || ir.Timing != nil || !strings.Contains(ir.Error, "its timing is refused") {
				t.Errorf("%s at %s: %+v", name, c.Label, ir)
			}
		}
	}
	truthful(t, rs)
	logs, _ := os.ReadFile(filepath.Join(s.StoreDir, "logs.txt"))
	for _, bad := range []string{"unsupported value", "runner died", "not_run"} {
		if strings.Contains(string(logs), bad) || strings.Contains(r.Stderr, bad) {
			t.Errorf("%q in the job's log or the submit's output:\n%s\n%s", bad, logs, r.Stderr)
		}
	}
}

// One implementation raises an exception with a 60 MiB message on each
// case, another one with escape sequences and BELs: the first costs a few
// KiB of the log, the results, the store and the history (it cost 692 MB
// of each and 424 s at 10 cases); the second's text reaches no output
// with its control characters, whether or not it is a terminal.
func TestHostileShout(t *testing.T) {
	hist := filepath.Join(dataDir, "xrun", "history.db")
	before := fileSize(hist)
	start := time.Now()
	r, s, rs := hostileJob(t, "shout", 2, "--env", "XRUN_SHOUT_MB=60")
	t.Logf("submit took %s, client peak RSS %d MiB", time.Since(start).Round(time.Second), r.MaxRSSBytes>>20)
	if rs.Status != result.StatusFailed || len(rs.Cases) != 2 {
		t.Fatalf("status %s, %d cases", rs.Status, len(rs.Cases))
	}
	for _, c := range rs.Cases {
		if h := c.Results["honest"]; h == nil || h.Status != result.ImplOK || h.Timing == nil {
			t.Errorf("honest at %s: %+v", c.Label, h)
		}
		long := c.Results["long"]
		if long == nil || long.Status != result.ImplError || len(long.Error) > 16<<10 ||
			!strings.Contains(long.Error, "RuntimeError: AAAA") || !strings.Contains(long.Error, "A END") || !strings.Contains(long.Error, "dropped here") {
			t.Errorf("long at %s: status %v, error of %d bytes", c.Label, long != nil && long.Status == result.ImplError, len(long.Error))
		}
		esc := c.Results["escapes"]
		if esc == nil || esc.Status != result.ImplError || strings.ContainsAny(esc.Error, "\x1b\x07") || !strings.Contains(esc.Error, "red bell end") {
			t.Errorf("escapes at %s: %+v", c.Label, esc)
		}
	}
	truthful(t, rs)
	if n := dirSize(s.StoreDir); n > 8<<20 {
		t.Errorf("the job's directory in the store is %d bytes", n)
	}
	for _, f := range []string{"logs.txt", "results.json", "out/runner.log", "out/results.json"} {
		if n := fileSize(filepath.Join(s.StoreDir, f)); n > 1<<20 {
			t.Errorf("%s is %d bytes", f, n)
		}
	}
	if grew := fileSize(hist) - before; grew > 4<<20 {
		t.Errorf("the history grew by %d bytes", grew)
	}
	id := xruntest.JobID(t, r)
	for _, args := range [][]string{{"logs", id}, {"results", "--csv", id}, {"results", "--markdown", id},
		{"history", "--csv", "e2e-hostile-shout"}, {"regress", id}, {"regress", "--markdown", id}} {
		w := x.Run(t, 2*time.Minute, args...)
		if strings.ContainsAny(w.Stdout, "\x1b\x07") || strings.ContainsAny(w.Stderr, "\x1b\x07") {
			t.Errorf("xrun %s (exit %d) printed control characters:\n%.3000q", strings.Join(args, " "), w.Code, w.Stdout)
		}
		if args[0] != "regress" && !strings.Contains(w.Stdout, "red bell end") {
			t.Errorf("xrun %s (exit %d) lacks the error:\n%.3000s\n%s", strings.Join(args, " "), w.Code, w.Stdout, w.Stderr)
		}
	}
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
