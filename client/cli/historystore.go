package cli

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/runner/result"
)

// historyPath is where the results history is: --history or
// XRUN_HISTORY, else beside the job store (history.db in its parent:
// $XDG_DATA_HOME/xrun/history.db).
func (a *App) historyPath() (string, error) {
	if a.HistoryPath != "" {
		return a.HistoryPath, nil
	}
	if p := a.getenv(history.EnvPath); p != "" {
		return p, nil
	}
	if a.StoreRoot != "" {
		return filepath.Join(filepath.Dir(a.StoreRoot), history.FileName), nil
	}
	return history.DefaultPath(a.getenv)
}

// History returns the results history, opening it on first use.
func (a *App) History() (*history.Store, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hist != nil {
		return a.hist, nil
	}
	path, err := a.historyPath()
	if err != nil {
		return nil, &ExitError{Code: ExitInfra, Err: err}
	}
	h, err := history.Open(path)
	if err != nil {
		return nil, &ExitError{Code: ExitInfra, Err: err}
	}
	a.hist = h
	return h, nil
}

// syncedHistory returns the history after importing the finished jobs of
// the store it lacks (saying how many on stderr).
func (a *App) syncedHistory() (*history.Store, error) {
	h, err := a.History()
	if err != nil {
		return nil, err
	}
	st, err := a.Store()
	if err != nil {
		return nil, err
	}
	n, err := h.ImportStore(st)
	if err != nil {
		return nil, &ExitError{Code: ExitInfra, Err: err}
	}
	if n > 0 {
		fmt.Fprintf(a.Err, "results history: imported %d finished job(s) from the job store\n", n)
	}
	return h, nil
}

// recordHistory imports a finished job's results into the history, the
// job store's Finished hook. A failure is a warning: the job's record and
// results are in the store, and the next xrun history or regress imports
// them.
func (a *App) recordHistory(j *jobs.Job) {
	st, err := a.Store()
	if err != nil || !st.Has(j.ID, jobs.ResultsFile) {
		return
	}
	h, err := a.History()
	if err == nil {
		_, err = h.ImportJob(st, j)
	}
	if err != nil && !errors.Is(err, history.ErrRunning) {
		fmt.Fprintf(a.Err, "warning: results history: %v (xrun history imports the job later)\n", err)
	}
}

// historyFlag is --history, for the commands that read the history.
func historyFlag(a *App) cli.Flag {
	return &cli.StringFlag{Name: "history", EnvVars: []string{history.EnvPath}, Destination: &a.HistoryPath,
		Usage: "the results history, an SQLite file on a local disk (default: $XDG_DATA_HOME/xrun/history.db)"}
}

// historyRun finds the run ref names in the history: a results.json (or
// a directory holding one), imported first; a job id the history has; or a
// job of the store (an id or its start), imported when the history lacks
// it. It returns the run, its results when at hand, and its job record
// when the store has one.
func (a *App) historyRun(h *history.Store, ref string) (history.Run, *result.Results, *jobs.Job, error) {
	if path, ok := resultsFile(ref); ok {
		r, err := result.ReadFile(path)
		if err != nil {
			return history.Run{}, nil, nil, &ExitError{Code: ExitUsage, Err: err}
		}
		abs, _ := filepath.Abs(path)
		im, err := h.Import(r, history.Source{Origin: abs})
		if err != nil {
			return history.Run{}, nil, nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("import %s: %w", path, err)}
		}
		run, err := lastRun(h, im.JobID)
		return run, r, nil, err
	}
	st, err := a.Store()
	if err != nil {
		return history.Run{}, nil, nil, err
	}
	if runs, err := h.RunsOfJob(ref); err == nil && len(runs) > 0 {
		run := runs[len(runs)-1]
		r, j := a.storedResults(st, run.JobID)
		if r == nil && run.Source != history.SourceStore {
			r, _ = result.ReadFile(run.Source)
		}
		return run, r, j, nil
	}
	m, err := a.Jobs()
	if err != nil {
		return history.Run{}, nil, nil, err
	}
	j, err := m.Resolve(ref)
	if err != nil {
		return history.Run{}, nil, nil, err
	}
	if !st.Has(j.ID, jobs.ResultsFile) {
		return history.Run{}, nil, j, usageError("job %s (%s) has no results yet: see `xrun logs %s`", j.ID, j.Status, j.ID)
	}
	if _, err := h.ImportJob(st, j); err != nil {
		return history.Run{}, nil, j, &ExitError{Code: ExitUsage, Err: err}
	}
	run, err := lastRun(h, j.ID)
	r, _ := a.storedResults(st, j.ID)
	return run, r, j, err
}

func lastRun(h *history.Store, id string) (history.Run, error) {
	runs, err := h.RunsOfJob(id)
	if err != nil {
		return history.Run{}, &ExitError{Code: ExitInfra, Err: err}
	}
	if len(runs) == 0 {
		return history.Run{}, &ExitError{Code: ExitInfra, Err: fmt.Errorf("job %s is not in the results history after its import", id)}
	}
	return runs[len(runs)-1], nil
}

// storedResults returns the store's results and record of job id, when
// it has them.
func (a *App) storedResults(st *jobs.Store, id string) (*result.Results, *jobs.Job) {
	j, err := st.Load(id)
	if err != nil {
		return nil, nil
	}
	r, err := result.ReadFile(filepath.Join(st.Dir(id), jobs.ResultsFile))
	if err != nil {
		return nil, j
	}
	return r, j
}
