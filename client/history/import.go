package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/flat"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/result"
)

// Source says where a run came from.
type Source struct {
	// Origin is SourceStore for a job of the job store, else the path of
	// the imported file.
	Origin string
	// Address is where the job ran as xrun reached it (the job record's
	// host: a Docker host address, a cluster), beside results.json's
	// machine name.
	Address string
	// JobID names a run whose results.json has no job id (the runner run
	// without xrun); default: the results' own.
	JobID string
	// ByJob makes the run replace every run of its job, whatever their
	// start, not only a run of the same start: a server's posts are
	// idempotent by job id, so a runner's retry or a duplicate post never
	// makes a second run.
	ByJob bool
	// Results, when set, is the run's results.json as posted,
	// gzip-compressed: xrun serve keeps it by job id (ResultsFile) for the
	// readers that need the whole run, and a post of the job replaces it.
	Results []byte
}

// SourceStore is the origin of runs imported from the job store.
const SourceStore = "store"

// SourcePost begins the origin of runs posted to xrun serve, followed by
// the name of the token that posted them.
const SourcePost = "post:"

// Imported says what an import did.
type Imported struct {
	JobID      string `json:"job_id"`
	Experiment string `json:"experiment"`
	Points     int    `json:"points"`
	// Replaced is set when the run was in the history already: its points
	// were replaced by these.
	Replaced bool `json:"replaced,omitempty"`
}

// ErrRunning is returned for the results of a job that has not ended.
var ErrRunning = errors.New("the results are partial (the job is still running): import them once it has ended")

// ErrPart says a job ran one part of a split sweep (xrun submit --split):
// the history takes the job its parts are gathered into, so that no
// timing counts twice.
var ErrPart = errors.New("the job ran one part of a split sweep: the results history takes the job its parts were gathered into")

// Import adds the run r to the history in one transaction: its points go
// into their series (made as needed). Importing a run again (the same job
// id and start) replaces its points, so imports can be repeated.
func (s *Store) Import(r *result.Results, src Source) (Imported, error) {
	return s.ImportContext(context.Background(), r, src)
}

// ImportContext is Import, stopped when ctx is done: the run's transaction
// is rolled back (the history holds all of the run, or none of it) and the
// error wraps ctx's.
func (s *Store) ImportContext(ctx context.Context, r *result.Results, src Source) (Imported, error) {
	return s.ImportRows(ctx, r, flat.Rows(r), src)
}

// ImportRows is ImportContext of the run r flattened to rows (r's cases
// are not read: flat.Read leaves them out).
func (s *Store) ImportRows(ctx context.Context, r *result.Results, rows []flat.Row, src Source) (Imported, error) {
	if r.Status == result.StatusRunning || r.Status == "" {
		return Imported{}, ErrRunning
	}
	jobID := r.JobID
	if jobID == "" {
		jobID = src.JobID
	}
	if jobID == "" {
		// The runner run without xrun: its start names it.
		jobID = "run-" + r.CreatedAt.UTC().Format("20060102T150405")
	}
	gpu, uuid := flat.GPUOf(r)
	at := r.CreatedAt.UTC()
	runKey := jobID + "|" + strconv.FormatInt(at.UnixNano(), 10)
	out := Imported{JobID: jobID, Experiment: r.Experiment, Points: len(rows)}

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return out, fmt.Errorf("import run %s: %w", jobID, err)
	}
	defer tx.Rollback()
	if err := s.db.d.lockImport(tx, r.Experiment); err != nil {
		return out, fmt.Errorf("import run %s: %w", jobID, err)
	}
	res, err := tx.Exec("DELETE FROM runs WHERE run_key = ? OR (? AND job_id = ?)", runKey, src.ByJob, jobID)
	if err != nil {
		return out, fmt.Errorf("import run %s: %w", jobID, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		out.Replaced = true
	}
	// The rules' kept state at or after this run rests on a history
	// without it (and all of it on the run it replaces).
	forgetFrom := at.UnixNano()
	if out.Replaced {
		forgetFrom = 0
	}
	if err := forgetStates(tx, r.Experiment, forgetFrom); err != nil {
		return out, fmt.Errorf("import run %s: %w", jobID, err)
	}
	// An import is wanted: a job removed from the history before comes
	// back, and the job store's catch-up imports it again from now on.
	if _, err := tx.Exec("DELETE FROM removed_jobs WHERE job_id = ?", jobID); err != nil {
		return out, fmt.Errorf("import run %s: %w", jobID, err)
	}
	// RETURNING, not LastInsertId: PostgreSQL's driver has no last id.
	var runID int64
	err = tx.QueryRow(`INSERT INTO runs (run_key, job_id, experiment, at, status, mode, host, address, gpu, gpu_uuid, driver, cuda,
		torch, git_commit, source, imported_at, baseline) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		runKey, jobID, r.Experiment, at.UnixNano(), r.Status, r.Mode, r.Env.Host, src.Address, gpu, uuid, r.Env.Driver,
		r.Env.CUDARuntime, r.Env.Torch, r.Env.GitCommit, src.Origin, time.Now().UnixNano(), r.Baseline).Scan(&runID)
	if err != nil {
		return out, fmt.Errorf("import run %s: %w", jobID, err)
	}
	// The experiment's series are read once, and the run's new series
	// written a batch to a statement before its points: a statement a
	// series or a point, and looking each series up after its insert,
	// made most of a large run's import (110,000 round trips of each on
	// PostgreSQL for a run at the case cap).
	seriesIDs, err := experimentSeries(tx, r.Experiment)
	if err != nil {
		return out, fmt.Errorf("import run %s: %w", jobID, err)
	}
	keys := make([]string, len(rows))
	var fresh []Key
	for i, row := range rows {
		k := KeyOf(row)
		keys[i] = k.String()
		if _, ok := seriesIDs[keys[i]]; !ok {
			seriesIDs[keys[i]] = 0
			fresh = append(fresh, k)
		}
	}
	if err := insertSeries(ctx, tx, fresh, seriesIDs); err != nil {
		return out, fmt.Errorf("import run %s: %w", jobID, err)
	}
	var insPoints *sql.Stmt // a full batch's, prepared for the first
	defer func() {
		if insPoints != nil {
			insPoints.Close()
		}
	}()
	batch := make([]any, 0, pointBatch*len(pointInsertColumns))
	for i, row := range rows {
		if i%1000 == 0 {
			if err := ctx.Err(); err != nil {
				return out, fmt.Errorf("import run %s: %w", jobID, err)
			}
		}
		kept, _ := json.Marshal(row.KeptSamples)
		batch = append(batch, runID, seriesIDs[keys[i]], row.ImplStatus, row.Error, row.MedianMS, row.Q1MS, row.Q3MS, row.Clock, row.Samples,
			row.Converged, row.Throttled, row.HostBusy, row.TFLOPS, row.GBps, row.PctPeakFlops, row.PctPeakBW, row.Intensity, row.Bound,
			row.Speedup, row.Verdict, string(kept), row.Autotune, row.SMClockMHz, row.MaxSMClockMHz, row.PowerW, row.ClockReadings,
			row.ClockReasons, row.Slowdown)
		if len(batch) == cap(batch) {
			if insPoints == nil {
				if insPoints, err = tx.Prepare(insertPoints(pointBatch)); err != nil {
					return out, fmt.Errorf("import run %s: %w", jobID, err)
				}
			}
			if _, err := insPoints.Exec(batch...); err != nil {
				return out, fmt.Errorf("import run %s: %w", jobID, err)
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		if _, err := tx.Exec(insertPoints(len(batch)/len(pointInsertColumns)), batch...); err != nil {
			return out, fmt.Errorf("import run %s: %w", jobID, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("import run %s: %w", jobID, err)
	}
	if src.Results != nil {
		if _, err := tx.Exec(`INSERT INTO results_files (job_id, body, stored_at) VALUES (?, ?, ?)
			ON CONFLICT(job_id) DO UPDATE SET body = excluded.body, stored_at = excluded.stored_at`,
			jobID, src.Results, time.Now().UnixNano()); err != nil {
			return out, fmt.Errorf("import run %s: %w", jobID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return out, fmt.Errorf("import run %s: %w", jobID, err)
	}
	return out, nil
}

// pointBatch is how many points one INSERT writes. A statement a point
// made a large run's import a round trip a point on PostgreSQL (110,000 of
// them for a run at the case cap); 500 points of 28 columns stay within
// both databases' limits on a statement's parameters (SQLite's 32,766,
// PostgreSQL's 65,535).
const pointBatch = 500

// pointInsertColumns are the points' columns an import writes, in the
// order of its arguments.
var pointInsertColumns = []string{"run_id", "series_id", "impl_status", "error", "median_ms", "q1_ms", "q3_ms", "clock", "samples",
	"converged", "throttled", "host_busy", "tflops", "gbps", "pct_peak_flops", "pct_peak_bw", "intensity", "bound", "speedup",
	"verdict", "kept", "autotune", "sm_clock_mhz", "max_sm_clock_mhz", "power_w", "clock_readings", "clock_reasons", "slowdown"}

// insertPoints is the INSERT of n points.
func insertPoints(n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO points (" + strings.Join(pointInsertColumns, ", ") + ") VALUES ")
	row := "(" + strings.Repeat("?, ", len(pointInsertColumns)-1) + "?)"
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	return b.String()
}

// seriesBatch is how many series one INSERT writes: 11 columns each, within
// both databases' limits on a statement's parameters, as pointBatch.
const seriesBatch = 2000

// insertSeries writes the series keys, a batch to a statement, and puts
// the id each got into ids.
func insertSeries(ctx context.Context, tx *tx, keys []Key, ids map[string]int64) error {
	for len(keys) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(len(keys), seriesBatch)
		var q strings.Builder
		q.WriteString(`INSERT INTO series (key, experiment, case_label, params, implementation, gpu, driver, cuda, stack,
		clock_policy, mode) VALUES `)
		args := make([]any, 0, 11*n)
		for i, k := range keys[:n] {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, k.String(), k.Experiment, k.Case, k.Params, k.Implementation, k.GPU, k.Driver, k.CUDA, k.Stack,
				k.ClockPolicy, k.Mode)
		}
		// The rows RETURNING gives carry their key: neither database
		// promises them in the order of the VALUES.
		q.WriteString(" RETURNING key, id")
		rows, err := tx.Query(q.String(), args...)
		if err != nil {
			return err
		}
		got := 0
		for rows.Next() {
			var key string
			var id int64
			if err := rows.Scan(&key, &id); err != nil {
				rows.Close()
				return err
			}
			ids[key] = id
			got++
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if got != n {
			return fmt.Errorf("%d series written, %d ids returned", n, got)
		}
		keys = keys[n:]
	}
	return nil
}

// experimentSeries maps the keys of experiment's series to their ids.
func experimentSeries(tx *tx, experiment string) (map[string]int64, error) {
	rows, err := tx.Query("SELECT key, id FROM series WHERE experiment = ?", experiment)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var key string
		var id int64
		if err := rows.Scan(&key, &id); err != nil {
			return nil, err
		}
		out[key] = id
	}
	return out, rows.Err()
}

// ImportFile imports a results.json, or every results.json under a
// directory (committed results, a nightly's downloaded artifacts), each
// run in a transaction of its own, calling check (when not nil) before
// each file is read, whose error stops the import as it is, and each
// (when not nil) after each run's commit. Once ctx is done it stops: the
// runs imported so far stay, the one being imported is rolled back, and
// the error wraps ctx's.
func (s *Store) ImportFile(ctx context.Context, path string, check func(file string) error, each func(Imported)) ([]Imported, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", path, err)
	}
	var files []string
	if fi.IsDir() {
		err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && d.Name() == result.FileName {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", path, err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("import %s: no %s under it", path, result.FileName)
		}
	} else {
		files = []string{path}
	}
	var out []Imported
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("import %s: %w", f, err)
		}
		if check != nil {
			if err := check(f); err != nil {
				return out, err
			}
		}
		r, rows, err := flat.ReadFile(f) // case by case: a run at the case cap is 170 MB of JSON
		if err != nil {
			return out, fmt.Errorf("import %s: %w", f, err)
		}
		abs, _ := filepath.Abs(f)
		im, err := s.ImportRows(ctx, r, rows, Source{Origin: abs})
		if err != nil {
			return out, fmt.Errorf("import %s: %w", f, err)
		}
		out = append(out, im)
		if each != nil {
			each(im)
		}
	}
	return out, nil
}

// ImportStore imports the finished jobs of the job store that the history
// lacks and that were not removed from it, and returns how many it
// imported. Every finished job is imported
// when its results land in the store (lifecycle's finalize); this catches
// up on any that were not (a history made later, a failed import).
func (s *Store) ImportStore(js *store.Store) (int, error) {
	list, err := js.List()
	if err != nil {
		return 0, err
	}
	// The store's finished jobs are looked up in the history, not the
	// history's jobs listed: a history of 10^6 runs took a second and a
	// half to list on every history and regress.
	var ids []string
	for _, j := range list {
		if store.Final(j.Status) && j.Split == "" {
			ids = append(ids, j.ID)
		}
	}
	known := map[string]bool{}
	if len(ids) > 0 {
		list, _ := json.Marshal(ids)
		// The jobs it has, and those removed from it (xrun history rm).
		rows, err := s.db.Query(`SELECT job_id FROM runs WHERE job_id IN (`+s.db.d.textList()+`)
			UNION SELECT job_id FROM removed_jobs WHERE job_id IN (`+s.db.d.textList()+`)`, string(list), string(list))
		if err != nil {
			return 0, fmt.Errorf("read results history: %w", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return 0, fmt.Errorf("read results history: %w", err)
			}
			known[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, fmt.Errorf("read results history: %w", err)
		}
	}
	n := 0
	var tampered error
	for _, j := range list {
		if known[j.ID] || !store.Final(j.Status) || j.Split != "" || !js.Has(j.ID, store.ResultsFile) {
			continue
		}
		if _, err := s.ImportJob(js, j); err != nil {
			var te *store.TamperedError
			switch {
			case errors.Is(err, ErrRunning):
				continue
			case errors.As(err, &te):
				// The others are imported; the first changed copy is
				// the error.
				if tampered == nil {
					tampered = err
				}
				continue
			}
			return n, err
		}
		n++
	}
	return n, tampered
}

// ImportJob imports the results job j has in the store, once they match
// the digest recorded when the job ended (store.CheckResults): a copy
// changed since is a *store.TamperedError, and nothing of it is imported.
func (s *Store) ImportJob(js *store.Store, j *store.Job) (Imported, error) {
	if j.Split != "" {
		return Imported{}, fmt.Errorf("job %s: %w (job %s)", j.ID, ErrPart, j.SplitOf)
	}
	if err := js.CheckResults(j); err != nil {
		return Imported{}, err
	}
	r, rows, err := flat.ReadFile(js.Results(j.ID))
	if err != nil {
		return Imported{}, fmt.Errorf("import job %s: %w", j.ID, err)
	}
	return s.ImportRows(context.Background(), r, rows, Source{Origin: SourceStore, Address: j.Host, JobID: j.ID})
}
