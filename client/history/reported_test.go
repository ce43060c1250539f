package history

import (
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/regress"
)

// The verdicts a night reported are kept as it reported them: the first
// report of a run stands, both lookups find it, and removing the run
// takes them with it.
func TestReported(t *testing.T) {
	s := open(t)
	r := run("night", time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC), 1, 1, 1)
	if _, err := s.Import(r, Source{Origin: "test"}); err != nil {
		t.Fatal(err)
	}
	runs, err := s.RunsOfJob("night")
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v, %v", runs, err)
	}
	id := runs[0].ID
	first := map[int64]regress.Verdict{7: {Status: regress.Regressed, Change: 0.2}}
	if err := s.Report(id, first); err != nil {
		t.Fatal(err)
	}
	if err := s.Report(id, map[int64]regress.Verdict{7: {Status: regress.Stable}}); err != nil {
		t.Fatal(err)
	}
	byRun, err := s.ReportedForRun(id)
	if err != nil || byRun[7].Status != regress.Regressed || byRun[7].Change != 0.2 {
		t.Errorf("ReportedForRun = %v, %v; the first report stands", byRun, err)
	}
	bySeries, err := s.ReportedForSeries(7)
	if err != nil || bySeries[id].Status != regress.Regressed {
		t.Errorf("ReportedForSeries = %v, %v", bySeries, err)
	}
	if _, err := s.Remove(runs); err != nil {
		t.Fatal(err)
	}
	if byRun, err := s.ReportedForRun(id); err != nil || len(byRun) != 0 {
		t.Errorf("after the run's removal: %v, %v", byRun, err)
	}
}

// The reported verdicts of an experiment come in one query, by series and
// run, and none of another experiment's.
func TestReportedForExperiment(t *testing.T) {
	s := open(t)
	r := run("night", time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC), 2, 1, 1)
	if _, err := s.Import(r, Source{Origin: "test"}); err != nil {
		t.Fatal(err)
	}
	points, err := s.Points(Filter{Experiment: "synthetic"})
	if err != nil || len(points) == 0 {
		t.Fatalf("points %d, %v", len(points), err)
	}
	p := points[0]
	if err := s.Report(p.RunID, map[int64]regress.Verdict{p.SeriesID: {Status: regress.Regressed}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReportedForExperiment("synthetic")
	if err != nil || len(got) != 1 || got[[2]int64{p.SeriesID, p.RunID}].Status != regress.Regressed {
		t.Errorf("ReportedForExperiment = %v, %v", got, err)
	}
	if other, err := s.ReportedForExperiment("other"); err != nil || len(other) != 0 {
		t.Errorf("another experiment's: %v, %v", other, err)
	}
}
