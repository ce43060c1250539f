package history

import (
	"path/filepath"
	"testing"
)

// LongSeries makes one series of n points, one a run, in time order, the
// last of its last job.
func TestLongSeries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	const n = 1000
	last, err := LongSeries(path, n)
	if err != nil {
		t.Fatal(err)
	}
	if last != LongSeriesJob(n-1) {
		t.Errorf("last job %s; want %s", last, LongSeriesJob(n-1))
	}
	h, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	points, err := h.Points(Filter{Experiment: LongSeriesExperiment})
	if err != nil {
		t.Fatal(err)
	}
	if series := Series(points); len(series) != 1 || len(series[0]) != n {
		t.Fatalf("%d points in %d series; want %d in one", len(points), len(series), n)
	}
	for i, p := range points {
		if p.JobID != LongSeriesJob(i) || (i > 0 && !p.Date.After(points[i-1].Date)) || len(p.KeptSamples) != 20 {
			t.Fatalf("point %d: job %s at %v with %d kept samples; want job %s after the one before, 20 samples",
				i, p.JobID, p.Date, len(p.KeptSamples), LongSeriesJob(i))
		}
	}
	if err := h.Check(); err != nil {
		t.Error(err)
	}
}
