package history

import "testing"

// An experiment past SQLite's 32766 variables a statement has as many
// series in the lists that judging it reads with: the change points of
// every series, and the other series of their groups (mates names each
// twice, so it failed past 16383). xrun report --html of an experiment
// with 50000 series failed with "too many SQL variables".
func TestSeriesListsPastSQLitesVariables(t *testing.T) {
	s := open(t)
	ids := make([]int64, 50000)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	if c, err := s.ChangePoints(ids...); err != nil || len(c) != 0 {
		t.Errorf("change points of 50000 series: %d, %v", len(c), err)
	}
	if m, err := s.mates(ids); err != nil || len(m) != 0 {
		t.Errorf("mates of 50000 series: %v, %v", m, err)
	}
}
