// Package nightly reads the results history the way a nightly run does:
// the history's series as a table, JSON, CSV or trend figures (Show), the
// regression rule's report over the latest runs with confirmation reruns
// and alerts (Regress), accepted change points (Accept) and imports of
// results.json files (Import). The history itself (an SQLite file) is
// client/history's; the rule is client/regress's.
package nightly

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/flat"
	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// EnvPath names the variable that says where the history is.
const EnvPath = history.EnvPath

// DefaultRule is the regression rule the history and regress commands
// judge by unless told otherwise (docs/regressions.md).
func DefaultRule() regress.Rule { return regress.Default() }

// Path is where the results history is: flag (--history) when given, else
// $XRUN_HISTORY, else beside the job store at storeRoot (history.db in its
// parent: $XDG_DATA_HOME/xrun/history.db).
func Path(flag string, getenv func(string) string, storeRoot string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if p := getenv(EnvPath); p != "" {
		return p, nil
	}
	if storeRoot != "" {
		return filepath.Join(filepath.Dir(storeRoot), history.FileName), nil
	}
	return history.DefaultPath(getenv)
}

// History is the results history open for one xrun invocation: tables
// and reports go to Out, notes (imports, figures written) to Err.
type History struct {
	h        *history.Store
	Out, Err io.Writer
}

// Open opens the history at path.
func Open(path string, out, errw io.Writer) (*History, error) {
	h, err := history.Open(path)
	if err != nil {
		return nil, infra(err)
	}
	return &History{h: h, Out: out, Err: errw}, nil
}

// New is the history h, open already (a server's), writing to out and
// errw.
func New(h *history.Store, out, errw io.Writer) *History { return &History{h: h, Out: out, Err: errw} }

// Backup writes a consistent copy of the history to path.
func (n *History) Backup(path string) error {
	if err := n.h.Backup(path); err != nil {
		return infra(err)
	}
	return nil
}

// Store is the history underneath.
func (n *History) Store() *history.Store { return n.h }

// Close closes the history's file.
func (n *History) Close() error { return n.h.Close() }

// Sync imports the finished jobs of st the history lacks, saying how many
// on Err.
func (n *History) Sync(st *store.Store) error {
	c, err := n.h.ImportStore(st)
	if err != nil {
		return infra(err)
	}
	if c > 0 {
		fmt.Fprintf(n.Err, "results history: imported %d finished job(s) from the job store\n", c)
	}
	return nil
}

// Record imports a finished job's results, the job store's Finished hook.
// A failure is a warning on Err: the job's record and results are in the
// store, and the next history or regress imports them.
func (n *History) Record(st *store.Store, j *store.Job) {
	if !st.Has(j.ID, store.ResultsFile) {
		return
	}
	if _, err := n.h.ImportJob(st, j); err != nil && !errors.Is(err, history.ErrRunning) && !errors.Is(err, history.ErrPart) {
		fmt.Fprintf(n.Err, "warning: results history: %v (xrun history imports the job later)\n", err)
	}
}

// Query picks series and runs of the history, as the history command's
// arguments give them.
type Query struct {
	Experiment, Implementation string
	// Cases are K=V parameters a case must have.
	Cases []string
	// Host and GPU match a part of the host's name or address, and of the
	// GPU's model or UUID.
	Host, GPU string
	// Since is a date (2026-11-01) or an age (30d, 12h).
	Since string
}

// Filter checks q and turns it into the history's filter; its errors are
// the user's to fix (exit 3).
func (q Query) Filter(now time.Time) (history.Filter, error) {
	f := history.Filter{Experiment: q.Experiment, Implementation: q.Implementation, Host: q.Host, GPU: q.GPU}
	var err error
	if f.Case, err = parseCases(q.Cases); err != nil {
		return f, err
	}
	f.Since, err = parseSince(q.Since, now)
	return f, err
}

// parseCases reads --case K=V flags.
func parseCases(flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, contract.Usagef("--case %q: give PARAM=VALUE, e.g. --case T=1024", f)
		}
		out[k] = v
	}
	return out, nil
}

// parseSince reads a date (2006-01-02, RFC 3339) or an age (30d, 12h).
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, contract.Usagef("--since %q: give a date (2026-11-01) or an age (30d, 12h)", s)
}

// run finds the run ref names: a results.json (or a directory holding
// one), imported first; a job id the history has; or a job of m's store
// (an id or its start), imported when the history lacks it. It returns
// the run, its results when at hand, and its job record when the store
// has one.
func (n *History) run(jobs Jobs, ref string) (history.Run, *result.Results, *store.Job, error) {
	h, st := n.h, jobs.Store
	if path, ok := result.Locate(ref); ok {
		r, rows, err := flat.ReadFile(path)
		if err != nil {
			return history.Run{}, nil, nil, contract.BadInput(fmt.Errorf("%s: %w", path, err))
		}
		abs, _ := filepath.Abs(path)
		im, err := h.ImportRows(context.Background(), r, rows, history.Source{Origin: abs})
		if err != nil {
			return history.Run{}, nil, nil, contract.BadInput(fmt.Errorf("import %s: %w", path, err))
		}
		run, err := n.lastRun(im.JobID)
		return run, r, nil, err
	}
	if runs, err := h.RunsOfJob(ref); err == nil && len(runs) > 0 {
		run := runs[len(runs)-1]
		r, j := storedResults(st, run.JobID)
		if r == nil && run.Source != history.SourceStore {
			r, _ = readHead(run.Source)
		}
		return run, r, j, nil
	}
	if jobs.Resolve == nil {
		return history.Run{}, nil, nil, contract.Usagef("%s is no run of the results history", ref)
	}
	j, err := jobs.Resolve(ref)
	if err != nil {
		return history.Run{}, nil, nil, err
	}
	if !st.Has(j.ID, store.ResultsFile) {
		return history.Run{}, nil, j, contract.Usagef("job %s (%s) has no results yet: see `xrun logs %s`", j.ID, j.Status, j.ID)
	}
	if _, err := h.ImportJob(st, j); err != nil {
		return history.Run{}, nil, j, importError(err)
	}
	run, err := n.lastRun(j.ID)
	r, _ := storedResults(st, j.ID)
	return run, r, j, err
}

func (n *History) lastRun(id string) (history.Run, error) {
	runs, err := n.h.RunsOfJob(id)
	if err != nil {
		return history.Run{}, infra(err)
	}
	if len(runs) == 0 {
		return history.Run{}, infra(fmt.Errorf("job %s is not in the results history after its import", id))
	}
	return runs[len(runs)-1], nil
}

// importError is the exit error of a failed import of a job of the
// store: a copy changed since the job ended is the store's trouble
// (exit 4), anything else the results' (exit 3).
func importError(err error) error {
	var te *store.TamperedError
	if errors.As(err, &te) {
		return infra(err)
	}
	return contract.BadInput(err)
}

// storedResults returns the store's results (without their cases:
// readHead) and record of job id, when it has them and they are as
// recorded when the job ended (store.CheckResults).
func storedResults(st *store.Store, id string) (*result.Results, *store.Job) {
	j, err := st.Load(id)
	if err != nil {
		return nil, nil
	}
	if st.CheckResults(j) != nil {
		return nil, j
	}
	r, err := readHead(st.Results(id))
	if err != nil {
		return nil, j
	}
	return r, j
}

// readHead reads a results.json without its cases (result.ReadHead):
// the run's status, criteria and settings, which is what the history's
// commands need of it beside the history, for a buffer's memory rather
// than that of a run at the case cap (a gigabyte).
func readHead(path string) (*result.Results, error) { return result.ReadHeadFile(path) }

// fullResults reads the results of run with their cases, from the job
// store or the file it was imported from (nil when neither has them).
func fullResults(st *store.Store, run history.Run) *result.Results {
	path := st.Results(run.JobID)
	if !st.Has(run.JobID, store.ResultsFile) || !asRecorded(st, run.JobID) {
		if run.Source == history.SourceStore {
			return nil
		}
		path = run.Source
	}
	r, err := result.ReadFile(path)
	if err != nil {
		return nil
	}
	return r
}

// infra marks err as the history's failure (exit 4).
func infra(err error) error { return &contract.ExitError{Code: contract.ExitInfra, Err: err} }

// asRecorded reports whether the store's results of job id are as they
// were when it ended (store.CheckResults); a job the store has no record
// of has nothing to check.
func asRecorded(st *store.Store, id string) bool {
	j, err := st.Load(id)
	return err != nil || st.CheckResults(j) == nil
}

// Jobs is the job store a History reads when a reference names a job
// rather than a run it has: the jobs' records and files (Store), and how
// an id or its start names one (Resolve, job.Manager's). The zero Jobs is
// no store, as for xrun serve's history.
type Jobs struct {
	Store   *store.Store
	Resolve func(ref string) (*store.Job, error)
}
