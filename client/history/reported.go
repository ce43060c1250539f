package history

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/xrun-dev/xrun/client/regress"
)

// Report keeps the verdicts the points of run (by series) got the night
// they were judged, so that what a night reported survives what changes
// the rule's reading later: MarkChange keeps them before it records a
// change point. The first report of a run stands: a second change point
// does not rewrite what the first kept.
func (s *Store) Report(run int64, verdicts map[int64]regress.Verdict) error {
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("record the verdicts in the results history: %w", err)
	}
	defer tx.Rollback()
	ins, err := tx.Prepare("INSERT INTO reported (run_id, series_id, verdict, reported_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING")
	if err != nil {
		return fmt.Errorf("record the verdicts in the results history: %w", err)
	}
	defer ins.Close()
	now := time.Now().UnixNano()
	for series, v := range verdicts {
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("record the verdicts in the results history: %w", err)
		}
		if _, err := ins.Exec(run, series, string(data), now); err != nil {
			return fmt.Errorf("record the verdicts in the results history: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record the verdicts in the results history: %w", err)
	}
	return nil
}

// ReportedForSeries returns the verdicts reported for the runs of series
// (by run id); a run no regress judged has none.
func (s *Store) ReportedForSeries(series int64) (map[int64]regress.Verdict, error) {
	return s.reported("SELECT run_id, verdict FROM reported WHERE series_id = ?", series)
}

// ReportedForRun returns the verdicts reported for the points of run (by
// series id).
func (s *Store) ReportedForRun(run int64) (map[int64]regress.Verdict, error) {
	return s.reported("SELECT series_id, verdict FROM reported WHERE run_id = ?", run)
}

// ReportedForExperiment returns the verdicts reported for the points of
// experiment's series, by series and run id: one query for what
// ReportedForSeries would ask of each series.
func (s *Store) ReportedForExperiment(experiment string) (map[[2]int64]regress.Verdict, error) {
	rows, err := s.db.Query(`SELECT x.series_id, x.run_id, x.verdict FROM reported x JOIN series s ON s.id = x.series_id
		WHERE s.experiment = ?`, experiment)
	if err != nil {
		return nil, fmt.Errorf("read the reported verdicts: %w", err)
	}
	defer rows.Close()
	out := map[[2]int64]regress.Verdict{}
	for rows.Next() {
		var series, run int64
		var data string
		if err := rows.Scan(&series, &run, &data); err != nil {
			return nil, fmt.Errorf("read the reported verdicts: %w", err)
		}
		var v regress.Verdict
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			return nil, fmt.Errorf("read the reported verdicts: %w", err)
		}
		out[[2]int64{series, run}] = v
	}
	return out, rows.Err()
}

func (s *Store) reported(q string, arg int64) (map[int64]regress.Verdict, error) {
	rows, err := s.db.Query(q, arg)
	if err != nil {
		return nil, fmt.Errorf("read the reported verdicts: %w", err)
	}
	defer rows.Close()
	out := map[int64]regress.Verdict{}
	for rows.Next() {
		var id int64
		var data string
		if err := rows.Scan(&id, &data); err != nil {
			return nil, fmt.Errorf("read the reported verdicts: %w", err)
		}
		var v regress.Verdict
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			return nil, fmt.Errorf("read the reported verdicts: %w", err)
		}
		out[id] = v
	}
	return out, rows.Err()
}

// keepNights keeps (Report) the verdicts of the values of series at or
// after at as their nights reported them, before a change point at at
// makes the rule read them against a new baseline. The values before at
// keep their reading: the rule is causal.
func (s *Store) keepNights(series []int64, at time.Time) error {
	points, err := s.Points(Filter{Series: series})
	if err != nil {
		return err
	}
	judged, err := s.Walk(points, regress.Default())
	if err != nil {
		return err
	}
	byRun := map[int64]map[int64]regress.Verdict{}
	for _, j := range judged {
		if j.Date.Before(at) {
			continue
		}
		if byRun[j.RunID] == nil {
			byRun[j.RunID] = map[int64]regress.Verdict{}
		}
		byRun[j.RunID][j.SeriesID] = j.Verdict.AsReported()
	}
	for run, vs := range byRun {
		if err := s.Report(run, vs); err != nil {
			return err
		}
	}
	return nil
}
