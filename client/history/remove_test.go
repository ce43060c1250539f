package history

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/result"
)

// Remove takes a run's points out with it, and the series only it had
// with their change points; the other runs, and the series they share,
// stay. The job store's catch-up does not bring a removed job back; an
// explicit import does.
func TestRemove(t *testing.T) {
	s := open(t)
	js, err := store.Open(filepath.Join(t.TempDir(), "jobs"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var results []*result.Results
	for i, id := range []string{"old", "mid", "new"} {
		cases := 2
		if id == "old" {
			cases = 3 // a case only the old run has: its series goes with it
		}
		r := run(id, start.Add(time.Duration(i)*24*time.Hour), cases, 2, 1)
		results = append(results, r)
		j := &store.Job{ID: id, Status: result.StatusSucceeded}
		if err := js.Create(j); err != nil {
			t.Fatal(err)
		}
		if err := result.WriteFile(js.Results(id), r); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.ImportStore(js); err != nil || n != 3 {
		t.Fatalf("ImportStore = %d, %v", n, err)
	}
	all, _ := s.Points(Filter{})
	var oldOnly int64
	for _, p := range all {
		if p.JobID == "old" && p.Case == "T=1024" {
			oldOnly = p.SeriesID
		}
	}
	if _, err := s.MarkChange([]int64{oldOnly}, start, "old", "only the old run's case"); err != nil {
		t.Fatal(err)
	}
	before, err := s.RunsBefore(start.Add(36 * time.Hour))
	if err != nil || len(before) != 2 || before[0].JobID != "old" || before[1].JobID != "mid" {
		t.Fatalf("RunsBefore = %+v, %v", before, err)
	}
	counts, err := s.CountPoints(before[:1])
	if err != nil || counts[before[0].ID] != 6 {
		t.Fatalf("CountPoints = %v, %v; want 6 points of old", counts, err)
	}
	removed, err := s.Remove(before[:1])
	if err != nil || len(removed) != 1 || removed[0].Points != 6 || removed[0].JobID != "old" {
		t.Fatalf("Remove = %+v, %v", removed, err)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	left, _ := s.Points(Filter{})
	if len(left) != 8 {
		t.Errorf("%d points left, want the 8 of mid and new", len(left))
	}
	for _, p := range left {
		if p.JobID == "old" || p.SeriesID == oldOnly {
			t.Errorf("a point of the removed run is left: %+v", p)
		}
	}
	if ch, _ := s.ChangePoints(oldOnly); len(ch[oldOnly]) != 0 {
		t.Errorf("the removed series' change point is left: %+v", ch)
	}
	var series int
	if err := s.db.QueryRow("SELECT count(*) FROM series").Scan(&series); err != nil || series != 4 {
		t.Errorf("%d series left, want 4 (%v)", series, err)
	}
	if n, err := s.ImportStore(js); err != nil || n != 0 {
		t.Errorf("the store's catch-up imported %d (%v): the removed job came back", n, err)
	}
	if _, err := s.Import(results[0], Source{Origin: "again"}); err != nil {
		t.Fatal(err)
	}
	if runs, _ := s.RunsOfJob("old"); len(runs) != 1 {
		t.Errorf("an explicit import did not bring the removed job back: %+v", runs)
	}
}
