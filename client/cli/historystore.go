package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/nightly"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

// history returns the results history, opening it on first use.
func (a *App) history() (*nightly.History, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hist != nil {
		return a.hist, nil
	}
	path, err := nightly.Path(a.HistoryPath, a.getenv, a.StoreRoot)
	if err != nil {
		return nil, &contract.ExitError{Code: contract.ExitInfra, Err: err}
	}
	// The history's reports (regress's text and markdown, which a
	// nightly puts in its job summary, the CSV) carry the experiments'
	// text: no control sequence reaches them, terminal or not.
	n, err := nightly.Open(path, render.SafeAlways(a.Out), a.Err)
	if err != nil {
		return nil, err
	}
	a.hist = n
	return n, nil
}

// syncedHistory returns the history after importing the finished jobs of
// the store it lacks (saying how many on stderr).
func (a *App) syncedHistory() (*nightly.History, error) {
	n, err := a.history()
	if err != nil {
		return nil, err
	}
	st, err := a.Store()
	if err != nil {
		return nil, err
	}
	return n, n.Sync(st)
}

// recordHistory imports a finished job's results into the history, the
// job store's Finished hook (a failure is a warning: nightly.Record).
func (a *App) recordHistory(j *store.Job) {
	st, err := a.Store()
	if err != nil || !st.Has(j.ID, store.ResultsFile) {
		return
	}
	if n, err := a.history(); err == nil {
		n.Record(st, j)
	} else {
		fmt.Fprintf(a.Err, "warning: results history: %v (xrun history imports the job later)\n", err)
	}
}

// historyFlag is --history, for the commands that read the history.
func historyFlag(a *App) cli.Flag {
	return &cli.StringFlag{Name: "history", EnvVars: []string{nightly.EnvPath}, Destination: &a.HistoryPath,
		Usage: "the results history, an SQLite file on a local disk (default: $XDG_DATA_HOME/xrun/history.db)"}
}
