package history

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/result"
)

// cpuRun is run on a CPU, every timing with the host's load; implementation
// i0 of the first case had others at others.
func cpuRun(id string, at time.Time, median, others float64) *result.Results {
	r := run(id, at, 2, 2, median)
	r.Mode, r.Env.GPUs = "cpu", nil
	for _, c := range r.Cases {
		for _, ir := range c.Results {
			ir.Timing.Clock = result.ClockPerfCounter
			ir.Timing.HostLoad = &result.HostLoad{Windows: 3, CPUs: 2, MaxLoad1: 1, OthersShare: 0.02, JobShare: 0.5}
		}
	}
	r.Cases[0].Results["i0"].Timing.HostLoad.OthersShare = others
	r.Warnings = analyze.Warnings(r)
	return r
}

// A CPU timing taken on a busy host is noisy: not judged, whatever its
// median, and kept out of the baseline, as a throttled GPU's is; the
// others of the same run are judged.
func TestHostBusyIsNoisy(t *testing.T) {
	s := open(t)
	start := time.Date(2026, 1, 1, 2, 17, 0, 0, time.UTC)
	night := func(i int) time.Time { return start.Add(time.Duration(i) * 24 * time.Hour) }
	for i := 0; i < 12; i++ {
		if _, err := s.Import(cpuRun(fmt.Sprintf("n%02d", i), night(i), 1.0+0.001*float64(i%3), 0.02), Source{}); err != nil {
			t.Fatal(err)
		}
	}
	// Night 12 ran beside a neighbour: i0 at T=256 took twice as long.
	busy := cpuRun("busy", night(12), 1.0, 0.63)
	busy.Cases[0].Results["i0"].Timing.MedianMS = 2.0
	if _, err := s.Import(busy, Source{}); err != nil {
		t.Fatal(err)
	}
	js, err := s.Judge("busy", regress.Default())
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[string]regress.Status{}
	for _, j := range js {
		statuses[j.Implementation+" "+j.Case] = j.Verdict.Status
		if j.Implementation == "i0" && j.Case == "T=256" {
			if !j.HostBusy || j.Verdict.Reason != "timed on a busy host" || j.Verdict.Accepted {
				t.Errorf("busy point: host_busy %v, %+v", j.HostBusy, j.Verdict)
			}
		}
	}
	// i1 is judged on its ratio to the run's baseline, i0, which has no
	// clean timing at T=256: no ratio, so noisy too.
	if statuses["i0 T=256"] != regress.Noisy || statuses["i1 T=256"] != regress.Noisy || statuses["i0 T=512"] != regress.Stable ||
		statuses["i1 T=512"] != regress.Stable {
		t.Errorf("statuses %v", statuses)
	}
	// The next quiet night's baseline is the twelve quiet nights: the busy
	// value did not join it.
	s.Import(cpuRun("n13", night(13), 1.0, 0.02), Source{})
	js, _ = s.Judge("n13", regress.Default())
	for _, j := range js {
		if j.Implementation == "i0" && j.Case == "T=256" && (j.Verdict.Status != regress.Stable || j.Verdict.Baseline != 12) {
			t.Errorf("the night after: %+v", j.Verdict)
		}
	}
}

// layout2Columns are the schema's lines of the columns layout 2 added.
var layout2Columns = []string{"\thost_busy      INTEGER NOT NULL DEFAULT 0,\n", "\tautotune       TEXT NOT NULL DEFAULT '',\n", ",\n\tbaseline    TEXT NOT NULL DEFAULT ''"}

// layout5Columns are the schema's lines of the columns layout 5 added.
var layout5Columns = []string{"\tsm_clock_mhz   INTEGER NOT NULL DEFAULT 0,\n", "\tmax_sm_clock_mhz INTEGER NOT NULL DEFAULT 0,\n",
	"\tpower_w        REAL NOT NULL DEFAULT 0,\n", "\tclock_readings INTEGER NOT NULL DEFAULT 0,\n",
	"\tclock_reasons  TEXT NOT NULL DEFAULT '',\n", "\tslowdown       TEXT NOT NULL DEFAULT '',\n"}

// layoutWithout is schema less the lines cols, or a failed test where
// one is not there.
func layoutWithout(t *testing.T, cols ...[]string) string {
	t.Helper()
	out := schema
	for _, cs := range cols {
		for _, col := range cs {
			cut := strings.Replace(out, col, "", 1)
			if cut == out {
				t.Fatalf("the layout has no %q to leave out", col)
			}
			out = cut
		}
	}
	return out
}

// A history of layout 1 (before host_busy, autotune and baseline) opens: the columns are added,
// its points read as not busy, and new runs import.
func TestMigrateLayout1(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	layout1 := layoutWithout(t, layout2Columns, layout5Columns)
	for _, q := range []string{
		layout1,
		`INSERT INTO runs (id, run_key, job_id, experiment, at, status, mode, host, address, gpu, gpu_uuid, driver, cuda,
			torch, git_commit, source, imported_at) VALUES (1, 'old', 'old', 'synthetic', 1, 'succeeded', 'cpu', 'box', '',
			'cpu: Xeon', '', '', '', '', '', 'test', 1)`,
		`INSERT INTO series (id, key, experiment, case_label, params, implementation, gpu, driver, cuda, stack,
			clock_policy, mode) VALUES (1, 'k', 'synthetic', 'T=256', '{"T":256}', 'i0', 'cpu: Xeon', '', '', '', '', 'cpu')`,
		`INSERT INTO points (run_id, series_id, impl_status, error, median_ms, q1_ms, q3_ms, clock, samples, converged,
			throttled, tflops, gbps, pct_peak_flops, pct_peak_bw, intensity, bound, speedup, verdict, kept)
			VALUES (1, 1, 'ok', '', 1.5, 1.4, 1.6, 'perf_counter', 100, 1, 0, 0, 0, 0, 0, 0, '', 0, '', '[]')`,
		"PRAGMA user_version = 1",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int
	if err := s.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != schemaVersion {
		t.Fatalf("user_version %d, %v", v, err)
	}
	pts, err := s.Points(Filter{Job: "old"})
	if err != nil || len(pts) != 1 || pts[0].HostBusy || pts[0].MedianMS != 1.5 {
		t.Fatalf("the old point: %+v, %v", pts, err)
	}
	if _, err := s.Import(cpuRun("new", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 1, 0.63), Source{}); err != nil {
		t.Fatal(err)
	}
	busy := 0
	pts, _ = s.Points(Filter{Job: "new"})
	for _, p := range pts {
		if p.HostBusy {
			busy++
		}
	}
	if len(pts) != 4 || busy != 1 {
		t.Errorf("new run: %d points, %d busy", len(pts), busy)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	// A migrated history opens as it is.
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
}
