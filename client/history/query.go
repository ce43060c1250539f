package history

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/flat"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

// Filter picks points of the history; a zero field picks everything.
type Filter struct {
	Experiment     string
	Implementation string
	// Case holds parameter = value pairs a point's case must have (values
	// as spec.FormatValue writes them: 1024, bfloat16, true).
	Case map[string]string
	// Host matches a run's machine name or its address (a substring,
	// ignoring case); GPU a device model or a GPU's UUID likewise.
	Host string
	GPU  string
	// Since drops runs that started before it.
	Since time.Time
	// Job keeps the series that job has points in.
	Job string
	// Series keeps these series.
	Series []int64
}

// Point is one implementation at one case of one run, in its series.
type Point struct {
	flat.Row
	SeriesID int64 `json:"series"`
	Key      Key   `json:"-"`
	RunID    int64 `json:"-"`
	// Address is where xrun reached the job's host; Source where the run
	// came from (SourceStore or a file).
	Address string `json:"address,omitempty"`
	Source  string `json:"source"`
	// Baseline is the implementation the run measured speedups against
	// (results.json's baseline; "" when the run names none).
	Baseline string `json:"baseline,omitempty"`
	// keptJSON is a walk's point's kept samples as stored, until its
	// series is judged: only a series longer than the rule's MinHistory
	// can need them (judgeGroup).
	keptJSON string
}

// Points returns the points f picks, by series (in the order the series
// were first seen), each series in time order.
func (s *Store) Points(f Filter) ([]Point, error) {
	q := "SELECT " + pointColumns + " FROM points p JOIN runs r ON r.id = p.run_id JOIN series s ON s.id = p.series_id"
	where, args := f.where(s.db.d)
	q += where
	q += " ORDER BY p.series_id, r.at, r.id"
	rows, err := s.db.Query(q, args...)
	if err != nil {
		return nil, fmt.Errorf("read results history: %w", err)
	}
	defer rows.Close()
	var out []Point
	for rows.Next() {
		p, err := scanPoint(rows, 0)
		if err != nil {
			return nil, err
		}
		if f.matches(&p) {
			out = append(out, p)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read results history: %w", err)
	}
	return out, nil
}

func (f Filter) matches(p *Point) bool {
	for k, v := range f.Case {
		pv, ok := p.Params[k]
		if !ok || spec.FormatValue(pv) != v {
			return false
		}
	}
	if f.Host != "" && !containsFold(p.Host, f.Host) && !containsFold(p.Address, f.Host) {
		return false
	}
	if f.GPU != "" && !containsFold(p.GPU, f.GPU) && !containsFold(p.GPUUUID, f.GPU) {
		return false
	}
	return true
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// Series splits points (as Points returns them) into their series.
func Series(points []Point) [][]Point {
	return splitSeries(points, func(p Point) int64 { return p.SeriesID })
}

// JudgedSeries splits judged points (as Walk returns them) into their
// series.
func JudgedSeries(judged []Judged) [][]Judged {
	return splitSeries(judged, func(j Judged) int64 { return j.SeriesID })
}

// splitSeries cuts xs, grouped by series, into one slice per series.
func splitSeries[T any](xs []T, series func(T) int64) [][]T {
	var out [][]T
	for i := 0; i < len(xs); {
		j := i
		for j < len(xs) && series(xs[j]) == series(xs[i]) {
			j++
		}
		out = append(out, xs[i:j])
		i = j
	}
	return out
}

// Values turns one series' points into the rule's values: an
// implementation that did not run correctly is errored; a timing that did
// not converge, was taken on a busy host, or whose own clock readings the
// clock rule (regress.ClockRule: a thermal or hardware slowdown, clocks
// well under the series' usual) calls noisy is noisy; and a new baseline
// starts at each change point and where the series' timings change clock
// (a new measurement method). A timing imported before the history kept
// clock readings is noisy where its run's throttled warning covered it.
func Values(series []Point, changes []ChangePoint) []regress.Value {
	return valuesFrom(&regress.State{}, series, changes)
}

// valuesFrom is Values resumed from st (the series' state after the
// points before these: its last timing method and usual clocks), which it
// leaves as it stands after them. changes are the change points after the
// points before these.
func valuesFrom(st *regress.State, series []Point, changes []ChangePoint) []regress.Value {
	out := make([]regress.Value, len(series))
	lastClock := st.LastClock
	next := 0 // the next change point to apply
	starts := make([]bool, len(series))
	clocks := make([]regress.Clocks, len(series))
	for i, p := range series {
		v := regress.Value{Run: p.JobID, At: p.Date, MedianMS: p.MedianMS, Q1MS: p.Q1MS, Q3MS: p.Q3MS, Samples: p.KeptSamples,
			Baseline: p.Baseline, Config: p.Autotune}
		for next < len(changes) && !changes[next].At.After(p.Date) {
			v.ChangePoint = true
			next++
		}
		if p.ImplStatus == result.ImplOK && p.MedianMS > 0 {
			clocks[i] = regress.Clocks{Readings: p.ClockReadings, SMClockMHz: p.SMClockMHz, Slowdown: p.Slowdown}
		}
		if v.Errored == "" && p.Clock != "" && p.ImplStatus == result.ImplOK {
			if lastClock != "" && p.Clock != lastClock {
				v.ChangePoint = true
			}
			lastClock = p.Clock
		}
		starts[i] = v.ChangePoint
		out[i] = v
	}
	st.LastClock = lastClock
	byClock := regress.DefaultClocks().NoiseFrom(st, clocks, starts)
	for i, p := range series {
		v := &out[i]
		switch {
		case p.ImplStatus == result.ImplWrong:
			v.Errored = "wrong result"
		case p.ImplStatus != result.ImplOK:
			v.Errored = p.ImplStatus
			if p.Error != "" {
				v.Errored += ": " + p.Error
			}
		case p.MedianMS <= 0:
			v.Errored = "no timing"
		case !p.Converged:
			v.Noisy = regress.NotConverged
		case byClock[i] != "":
			v.Noisy = byClock[i]
		case p.Throttled && p.ClockReadings == 0:
			v.Noisy = LegacyThrottled
		case p.HostBusy:
			v.Noisy = BusyHost
		}
	}
	return out
}

// BusyHost is the noisy reason of a CPU timing taken on a busy host.
const BusyHost = "timed on a busy host"

// LegacyThrottled is the noisy reason of a timing without clock readings
// of its own (results, or a history row, from before they were kept) that
// its run's runner called throttled: nothing is left to judge it by again.
const LegacyThrottled = "timed on a throttled GPU (by its run's warning: no clock readings of its own to judge)"

// ChangePoint starts a new baseline for a series: the user accepted the
// change its values show from At on.
type ChangePoint struct {
	ID       int64     `json:"id"`
	SeriesID int64     `json:"series"`
	At       time.Time `json:"at"`
	JobID    string    `json:"job_id"`
	Note     string    `json:"note,omitempty"`
	Created  time.Time `json:"created"`
}

// MarkChange records a change point at the start of job's run in each of
// series (replacing one already at that time), and returns how many it
// recorded.
func (s *Store) MarkChange(series []int64, at time.Time, job, note string) (int, error) {
	if err := s.keepNights(series, at); err != nil {
		return 0, err
	}
	tx, err := s.db.Begin()
	if err != nil {
		return 0, fmt.Errorf("record change point: %w", err)
	}
	defer tx.Rollback()
	now := time.Now().UnixNano()
	experiments := map[string]bool{}
	for _, id := range series {
		var e string
		if err := tx.QueryRow("SELECT experiment FROM series WHERE id = ?", id).Scan(&e); err != nil {
			return 0, fmt.Errorf("record change point: series %d: %w", id, err)
		}
		if !experiments[e] {
			experiments[e] = true
			if err := forgetStates(tx, e, 0); err != nil {
				return 0, fmt.Errorf("record change point: %w", err)
			}
		}
		if _, err := tx.Exec(`INSERT INTO change_points (series_id, at, job_id, note, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT(series_id, at) DO UPDATE SET job_id = excluded.job_id, note = excluded.note, created_at = excluded.created_at`,
			id, at.UnixNano(), job, note, now); err != nil {
			return 0, fmt.Errorf("record change point: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("record change point: %w", err)
	}
	return len(series), nil
}

// ChangePoints returns the change points of series (all when empty), by
// series and time.
func (s *Store) ChangePoints(series ...int64) (map[int64][]ChangePoint, error) {
	q := "SELECT id, series_id, at, job_id, note, created_at FROM change_points"
	var args []any
	if len(series) > 0 {
		// One JSON array, not a variable per series (Filter.where says why).
		ids, _ := json.Marshal(series)
		q, args = q+" WHERE series_id IN ("+s.db.d.idList()+")", append(args, string(ids))
	}
	q += " ORDER BY series_id, at"
	rows, err := s.db.Query(q, args...)
	if err != nil {
		return nil, fmt.Errorf("read change points: %w", err)
	}
	defer rows.Close()
	out := map[int64][]ChangePoint{}
	for rows.Next() {
		var c ChangePoint
		var at, created int64
		if err := rows.Scan(&c.ID, &c.SeriesID, &at, &c.JobID, &c.Note, &created); err != nil {
			return nil, fmt.Errorf("read change points: %w", err)
		}
		c.At, c.Created = time.Unix(0, at).UTC(), time.Unix(0, created).UTC()
		out[c.SeriesID] = append(out[c.SeriesID], c)
	}
	return out, rows.Err()
}

// Run is one imported run.
type Run struct {
	ID         int64     `json:"-"`
	JobID      string    `json:"job_id"`
	Experiment string    `json:"experiment"`
	At         time.Time `json:"at"`
	Status     string    `json:"status"`
	Mode       string    `json:"mode"`
	Host       string    `json:"host"`
	Address    string    `json:"address,omitempty"`
	GPU        string    `json:"gpu"`
	GPUUUID    string    `json:"gpu_uuid,omitempty"`
	Source     string    `json:"source"`
}

// Runs returns the runs of experiment (all when empty) in time order.
func (s *Store) Runs(experiment string) ([]Run, error) {
	return s.runs("experiment = ? OR ? = ''", experiment, experiment)
}

// RunsOfJob returns the runs of job id (one, unless its results were
// imported from two different starts).
func (s *Store) RunsOfJob(id string) ([]Run, error) { return s.runs("job_id = ?", id) }

// MinJobPrefix is the shortest start of a job id FindRuns takes for the
// job it alone begins.
const MinJobPrefix = 4

// ErrAmbiguous is FindRuns' error for a start of an id that several jobs
// begin with.
var ErrAmbiguous = errors.New("begins the ids of several jobs")

// FindRuns returns the runs of job ref: the job of that id, else the one
// job whose id begins with ref (at least MinJobPrefix characters, as a
// person types a short id); none when no job is either, and an error
// wrapping ErrAmbiguous when several begin with ref.
func (s *Store) FindRuns(ref string) ([]Run, error) {
	runs, err := s.RunsOfJob(ref)
	if err != nil || len(runs) > 0 || len(ref) < MinJobPrefix {
		return runs, err
	}
	esc := strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(ref)
	rows, err := s.db.Query(`SELECT DISTINCT job_id FROM runs WHERE job_id LIKE ? ESCAPE '\' ORDER BY job_id LIMIT 3`, esc+"%")
	if err != nil {
		return nil, fmt.Errorf("read results history: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read results history: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read results history: %w", err)
	}
	switch len(ids) {
	case 0:
		return nil, nil
	case 1:
		return s.RunsOfJob(ids[0])
	}
	return nil, fmt.Errorf("%q %w (%s, ...): give more of the id", ref, ErrAmbiguous, strings.Join(ids[:2], ", "))
}

func (s *Store) runs(where string, args ...any) ([]Run, error) {
	rows, err := s.db.Query(`SELECT id, job_id, experiment, at, status, mode, host, address, gpu, gpu_uuid, source
		FROM runs WHERE `+where+` ORDER BY at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("read results history: %w", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		var at int64
		if err := rows.Scan(&r.ID, &r.JobID, &r.Experiment, &at, &r.Status, &r.Mode, &r.Host, &r.Address, &r.GPU, &r.GPUUUID, &r.Source); err != nil {
			return nil, fmt.Errorf("read results history: %w", err)
		}
		r.At = time.Unix(0, at).UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}

// ResultsFile returns the results.json kept of job id, gzip-compressed
// as it was posted (Source.Results); ok is false when none is kept.
func (s *Store) ResultsFile(id string) (body []byte, ok bool, err error) {
	err = s.db.QueryRow("SELECT body FROM results_files WHERE job_id = ?", id).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read the results of job %s: %w", id, err)
	}
	return body, true, nil
}
