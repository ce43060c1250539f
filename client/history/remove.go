package history

import (
	"fmt"
	"time"
)

// Removed says what a removal took out of the history.
type Removed struct {
	Run
	Points int `json:"points"`
}

// RunsBefore returns the runs that started before t, in time order.
func (s *Store) RunsBefore(t time.Time) ([]Run, error) {
	return s.runs("at < ?", t.UnixNano())
}

// CountPoints returns how many points each of runs has, by run id.
func (s *Store) CountPoints(runs []Run) (map[int64]int, error) {
	out := map[int64]int{}
	for _, r := range runs {
		var n int
		if err := s.db.QueryRow("SELECT count(*) FROM points WHERE run_id = ?", r.ID).Scan(&n); err != nil {
			return nil, fmt.Errorf("read results history: %w", err)
		}
		out[r.ID] = n
	}
	return out, nil
}

// Remove takes runs out of the history in one transaction: their points,
// the series left with no point and those series' change points. Their
// jobs are remembered as removed, so that catching up on the job store
// (ImportStore) does not bring them back; importing one explicitly does.
func (s *Store) Remove(runs []Run) ([]Removed, error) {
	tx, err := s.db.Begin()
	if err != nil {
		return nil, fmt.Errorf("remove from results history: %w", err)
	}
	defer tx.Rollback()
	now := time.Now().UnixNano()
	out := make([]Removed, 0, len(runs))
	for _, r := range runs {
		res, err := tx.Exec("DELETE FROM points WHERE run_id = ?", r.ID)
		if err != nil {
			return nil, fmt.Errorf("remove job %s from results history: %w", r.JobID, err)
		}
		n, _ := res.RowsAffected()
		if err := forgetStates(tx, r.Experiment, 0); err != nil {
			return nil, fmt.Errorf("remove job %s from results history: %w", r.JobID, err)
		}
		if _, err := tx.Exec("DELETE FROM runs WHERE id = ?", r.ID); err != nil {
			return nil, fmt.Errorf("remove job %s from results history: %w", r.JobID, err)
		}
		if _, err := tx.Exec(`INSERT INTO removed_jobs (job_id, removed_at) VALUES (?, ?)
			ON CONFLICT(job_id) DO UPDATE SET removed_at = excluded.removed_at`, r.JobID, now); err != nil {
			return nil, fmt.Errorf("remove job %s from results history: %w", r.JobID, err)
		}
		out = append(out, Removed{Run: r, Points: int(n)})
	}
	if _, err := tx.Exec("DELETE FROM results_files WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.job_id = results_files.job_id)"); err != nil {
		return nil, fmt.Errorf("remove from results history: %w", err)
	}
	empty := "SELECT id FROM series WHERE NOT EXISTS (SELECT 1 FROM points p WHERE p.series_id = series.id)"
	if _, err := tx.Exec("DELETE FROM change_points WHERE series_id IN (" + empty + ")"); err != nil {
		return nil, fmt.Errorf("remove from results history: %w", err)
	}
	if _, err := tx.Exec("DELETE FROM series WHERE id IN (" + empty + ")"); err != nil {
		return nil, fmt.Errorf("remove from results history: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("remove from results history: %w", err)
	}
	return out, nil
}
