package history

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/result"
)

// nightOf is a night of a history whose series move as a team's do: steps
// that hold (a regression, a fix), spikes, a slower host, an
// implementation that crashed or did not converge.
func nightOf(rng *rand.Rand, i int, at time.Time, level map[string]float64) *result.Results {
	r := run(fmt.Sprintf("n%03d", i), at, 2, 3, 1)
	host := 1.0
	if rng.IntN(12) == 0 {
		host = 1.12
	}
	for _, c := range r.Cases {
		for _, name := range r.Implementations {
			ir := c.Results[name]
			if rng.IntN(20) == 0 {
				level[name] *= []float64{1.3, 0.8}[rng.IntN(2)]
			}
			x := level[name] * host * (1 + 0.01*rng.NormFloat64())
			if rng.IntN(25) == 0 {
				x *= 1.6
			}
			t := ir.Timing
			t.MedianMS, t.Q1MS, t.Q3MS = x, x*0.99, x*1.01
			t.KeptSamplesMS = []float64{x * 0.98, x * 0.99, x, x * 1.01, x * 1.02}
			switch rng.IntN(30) {
			case 0:
				ir.Status, ir.Error, ir.Timing = result.ImplError, "crashed", nil
			case 1:
				t.Converged = false
			}
		}
	}
	return r
}

// wholeVerdicts judges every point of the history from its start, with no
// kept state: by series id and job.
func wholeVerdicts(t *testing.T, s *Store, before time.Time) map[[2]string]regress.Verdict {
	t.Helper()
	pts, err := s.Points(Filter{Experiment: "synthetic"})
	if err != nil {
		t.Fatal(err)
	}
	var kept []Point
	for _, p := range pts {
		if before.IsZero() || !p.Date.After(before) {
			kept = append(kept, p)
		}
	}
	js, err := s.Walk(kept, regress.Default())
	if err != nil {
		t.Fatal(err)
	}
	out := map[[2]string]regress.Verdict{}
	for _, j := range js {
		out[[2]string{fmt.Sprint(j.SeriesID), j.JobID}] = j.Verdict
	}
	return out
}

// A walk judged from the rules' kept state gives every verdict a walk
// from the series' start gives: the table of the last runs and regress of
// one of them, as the history grows, and after each change that a kept
// state rests on (a run imported before it, a change point, a run
// removed), which drops the state.
func TestWalkFromKeptState(t *testing.T) {
	defer func(k int) { checkpointKeep = k }(checkpointKeep)
	checkpointKeep = 5
	s := open(t)
	rng := rand.New(rand.NewPCG(5, 9))
	start := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	nightAt := func(i int) time.Time { return start.Add(time.Duration(i) * 24 * time.Hour) }
	level := map[string]float64{"i0": 1, "i1": 2, "i2": 0.5}
	nights := 0
	statuses := map[regress.Status]int{}
	grow := func(n int) {
		for range n {
			if _, err := s.Import(nightOf(rng, nights, nightAt(nights), level), Source{}); err != nil {
				t.Fatal(err)
			}
			nights++
		}
	}
	check := func(when string) {
		t.Helper()
		want := wholeVerdicts(t, s, time.Time{})
		perSeries := map[int64]int{}
		for k := range want {
			var id int64
			fmt.Sscan(k[0], &id)
			perSeries[id]++
		}
		for _, last := range []int{1, 3, 7} {
			n := 0
			err := s.WalkFilter(context.Background(), Filter{Experiment: "synthetic"}, regress.Default(), last,
				func(int, []string) error { return nil },
				func(_, shown []Judged, earlier map[int64]int) error {
					for _, ser := range JudgedSeries(shown) {
						id := ser[0].SeriesID
						if total := perSeries[id]; earlier[id] != total-len(ser) {
							t.Fatalf("%s, --last %d: series %d: %d earlier runs left out; want %d of %d", when, last, id, earlier[id], total-len(ser), total)
						}
					}
					for _, j := range shown {
						n++
						w, ok := want[[2]string{fmt.Sprint(j.SeriesID), j.JobID}]
						if !ok || !reflect.DeepEqual(j.Verdict, w) {
							t.Fatalf("%s, --last %d: series %d job %s: %+v; from the start %+v", when, last, j.SeriesID, j.JobID, j.Verdict, w)
						}
					}
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if n != 6*min(last, nights) {
				t.Fatalf("%s, --last %d: %d points shown; want %d", when, last, n, 6*min(last, nights))
			}
		}
		// The report's walk shows every point: it is judged from the start,
		// and in two stretches where it keeps the state between them.
		n := 0
		err := s.WalkExperiment(context.Background(), "synthetic", regress.Default(), func(js []Judged) error {
			for _, j := range js {
				n++
				statuses[j.Verdict.Shown()]++
				if w := want[[2]string{fmt.Sprint(j.SeriesID), j.JobID}]; !reflect.DeepEqual(j.Verdict, w) {
					t.Fatalf("%s, every point: series %d job %s: %+v; from the start %+v", when, j.SeriesID, j.JobID, j.Verdict, w)
				}
			}
			return nil
		})
		if err != nil || n != len(want) {
			t.Fatalf("%s, every point: %d judged (%v); want %d", when, n, err, len(want))
		}
		runs, err := s.Runs("synthetic")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs[len(runs)-3:] {
			want := wholeVerdicts(t, s, r.At)
			js, err := s.Judge(r.JobID, regress.Default())
			if err != nil || len(js) != 6 {
				t.Fatalf("%s: regress of %s: %d points (%v)", when, r.JobID, len(js), err)
			}
			for _, j := range js {
				w := want[[2]string{fmt.Sprint(j.SeriesID), j.JobID}].AsReported()
				if got := j.Verdict.AsReported(); !reflect.DeepEqual(got, w) {
					t.Fatalf("%s: regress of %s: series %d: %+v; from the start %+v", when, r.JobID, j.SeriesID, got, w)
				}
			}
		}
	}
	states := func() int {
		var n int
		if err := s.db.QueryRow("SELECT count(*) FROM walk_states").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	grow(30)
	check("30 nights")
	if states() != 2 {
		t.Fatalf("%d groups' states kept after the first walks; want 2 (one a case)", states())
	}
	for range 4 {
		grow(7)
		check(fmt.Sprintf("%d nights", nights))
	}
	if s.resumed.Load() == 0 {
		t.Fatal("no walk was judged from a kept state")
	}
	// Regress of an old run keeps no state earlier than the one kept.
	var at int64
	if err := s.db.QueryRow("SELECT max(at) FROM walk_states").Scan(&at); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Judge("n020", regress.Default()); err != nil {
		t.Fatal(err)
	}
	var after int64
	if err := s.db.QueryRow("SELECT min(at) FROM walk_states").Scan(&after); err != nil || after != at {
		t.Fatalf("after regress of an old run the states are at %d (%v); want them left at %d", after, err, at)
	}

	// A run imported before the states drops them.
	back := nightOf(rng, 999, nightAt(nights-20).Add(time.Hour), level)
	if _, err := s.Import(back, Source{}); err != nil {
		t.Fatal(err)
	}
	if n := states(); n != 0 {
		t.Errorf("%d states kept after a run imported before them; want 0", n)
	}
	check("a run imported before the states")

	// A change point recorded, then a run removed.
	pts, err := s.Points(Filter{Experiment: "synthetic", Implementation: "i1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkChange([]int64{pts[0].SeriesID}, nightAt(nights-15), "n-15", "new kernel"); err != nil {
		t.Fatal(err)
	}
	if n := states(); n != 0 {
		t.Errorf("%d states kept after a change point; want 0", n)
	}
	check("a change point")
	runs, err := s.RunsOfJob(fmt.Sprintf("n%03d", nights-25))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remove(runs); err != nil {
		t.Fatal(err)
	}
	if n := states(); n != 0 {
		t.Errorf("%d states kept after a run removed; want 0", n)
	}
	check("a run removed")
	grow(3)
	check("3 more nights")
	for _, st := range []regress.Status{regress.Regressed, regress.Improved, regress.Spike, regress.Stable, regress.Noisy, regress.Errored} {
		if statuses[st] == 0 {
			t.Errorf("no %s verdict in the walks: the history does not try the kept state on it (%v)", st, statuses)
		}
	}
}

// A walk that began before a change to what the states rest on writes no
// state: its experiment's epoch moved.
func TestNoStateKeptOverAChange(t *testing.T) {
	s := open(t)
	start := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	for i := range 3 {
		if _, err := s.Import(run(fmt.Sprintf("n%d", i), start.Add(time.Duration(i)*time.Hour), 1, 2, 1), Source{}); err != nil {
			t.Fatal(err)
		}
	}
	_, epochs, err := s.loadCheckpoints(context.Background(), regress.Default(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cp := &checkpoint{experiment: "synthetic", pos: runPos{1, 1}, series: map[int64]*seriesState{}}
	if _, err := s.Import(run("n9", start.Add(-time.Hour), 1, 2, 1), Source{}); err != nil {
		t.Fatal(err)
	}
	if err := s.saveCheckpoints(context.Background(), regress.Default(), []newCheckpoint{{group: "g", cp: cp}}, epochs); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.QueryRow("SELECT count(*) FROM walk_states").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d states kept (%v) by a walk that began before an import; want 0", n, err)
	}
	_, epochs, _ = s.loadCheckpoints(context.Background(), regress.Default(), nil)
	if err := s.saveCheckpoints(context.Background(), regress.Default(), []newCheckpoint{{group: "g", cp: cp}}, epochs); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRow("SELECT count(*) FROM walk_states").Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d states kept (%v) by a walk with no change since it began; want 1", n, err)
	}
}
