package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/nightly"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/site"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// historyReader is where the history's readers (history, regress,
// compare, results, report) read: this machine (the job store and the
// history beside it, localReader) or an xrun serve (--server,
// serverReader), which answers with what the same code makes of its
// history. A command asks a.reader for one and prints what it gets as it
// prints a local one, so that both print the same bytes.
type historyReader interface {
	// show prints what xrun history prints.
	show(ctx context.Context, q nightly.Query, o nightly.ShowOptions) error
	// job returns the results.json of the job ref names, as stored, with
	// its id and where it ran as xrun reached it (compare's host).
	job(ctx context.Context, ref string) (storedRun, error)
	// regress judges the runs o.Refs name (none: the latest run of each
	// experiment on each kind of machine) and prints the report as xrun
	// regress does.
	regress(ctx context.Context, o nightly.RegressOptions) error
	// site writes the pages of xrun report --html into o.Dir as site.Build
	// writes them, and returns them.
	site(ctx context.Context, o site.Options) ([]site.Page, error)
}

// storedRun is a job's results.json as stored, decoded.
type storedRun struct {
	JobID   string
	Address string
	Data    []byte
	Results *result.Results
}

// serverFlag is --server, for the commands that read the history.
func serverFlag(dest *string) cli.Flag {
	return &cli.StringFlag{Name: "server", EnvVars: []string{EnvServer}, Destination: dest,
		Usage: "read from the xrun serve at `URL`, with the read token in $XRUN_SERVER_TOKEN"}
}

// reader is the server at base when base is set, else this machine.
func (a *App) reader(base string) (historyReader, error) {
	if base == "" {
		return localReader{a}, nil
	}
	c, err := a.readServer(base)
	if err != nil {
		return nil, err
	}
	return serverReader{a: a, c: c}, nil
}

// localReader reads the job store and the history beside it.
type localReader struct{ a *App }

func (l localReader) show(ctx context.Context, q nightly.Query, o nightly.ShowOptions) error {
	n, err := l.a.syncedHistory()
	if err != nil {
		return err
	}
	return n.Show(o)
}

func (l localReader) job(ctx context.Context, ref string) (storedRun, error) {
	j, r, data, err := l.a.jobResults(ctx, ref)
	if err != nil {
		return storedRun{}, err
	}
	return storedRun{JobID: j.ID, Address: j.Host, Data: data, Results: r}, nil
}

func (l localReader) regress(ctx context.Context, o nightly.RegressOptions) error {
	n, err := l.a.syncedHistory()
	if err != nil {
		return err
	}
	m, err := l.a.Jobs()
	if err != nil {
		return err
	}
	return n.Regress(ctx, nightly.Jobs{Store: m.Store, Resolve: m.Resolve}, o)
}

func (l localReader) site(ctx context.Context, o site.Options) ([]site.Page, error) {
	n, err := l.a.syncedHistory()
	if err != nil {
		return nil, err
	}
	st, err := l.a.Store()
	if err != nil {
		return nil, err
	}
	o.Progress = render.SafeAlways(l.a.Err)
	var mu sync.Mutex
	warned := map[string]bool{}
	o.Results = func(r history.Run, cases bool) *result.Results {
		return historyRunResults(st, r, cases, func(err error) {
			mu.Lock()
			defer mu.Unlock()
			if !warned[r.JobID] {
				warned[r.JobID] = true
				fmt.Fprintf(o.Progress, "report: warning: %v; the job's page leaves them out\n", err)
			}
		})
	}
	return site.Build(n.Store(), o)
}

// serverReader reads an xrun serve's history with a read token.
type serverReader struct {
	a *App
	c *serverClient
}

func (s serverReader) show(ctx context.Context, q nightly.Query, o nightly.ShowOptions) error {
	return historyFromServer(ctx, s.a, s.c, q, o)
}

func (s serverReader) job(ctx context.Context, ref string) (storedRun, error) {
	var runs []history.Run
	if err := s.c.getJSON(ctx, "/api/v1/runs/"+url.PathEscape(ref), nil, "read the runs of job "+ref, &runs); err != nil {
		return storedRun{}, err
	}
	if len(runs) == 0 {
		return storedRun{}, usageError("server %s has no run of job %s", s.c.name(), ref)
	}
	run := runs[len(runs)-1]
	resp, err := s.c.do(ctx, http.MethodGet, "/api/v1/runs/"+url.PathEscape(run.JobID)+"/results", nil, nil, "", "read the results of job "+ref)
	if err != nil {
		return storedRun{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return storedRun{}, &contract.ExitError{Code: contract.ExitInfra, Err: fmt.Errorf("read the results of job %s from %s: %v", ref, s.c.name(), err)}
	}
	r, err := result.Decode(data)
	if err != nil {
		return storedRun{}, &contract.ExitError{Code: contract.ExitInfra, Err: fmt.Errorf("the results of job %s from %s: %w", ref, s.c.name(), err)}
	}
	return storedRun{JobID: run.JobID, Address: run.Address, Data: data, Results: r}, nil
}

// regress has the server judge the runs (GET /api/v1/regress: the
// report as JSON) and prints its report as a local one is printed, its
// alert included.
func (s serverReader) regress(ctx context.Context, o nightly.RegressOptions) error {
	switch {
	case o.Rerun != nil:
		return usageError("--confirm reruns jobs of this machine's store; it does not apply with --server")
	case o.Plot != "":
		return usageError("--plot draws from a local history; it does not apply with --server")
	}
	q := url.Values{}
	for _, ref := range o.Refs {
		if _, ok := result.Locate(ref); ok {
			return usageError("%s is a results.json: with --server, regress judges the server's runs by job id (xrun history push sends the store's)", ref)
		}
		q.Add("job", ref)
	}
	q.Set("window", fmt.Sprint(o.Rule.Window))
	q.Set("min_history", fmt.Sprint(o.Rule.MinHistory))
	q.Set("score", fmt.Sprint(o.Rule.Score))
	q.Set("floor", fmt.Sprint(o.Rule.Floor))
	var rep nightly.Report
	if err := s.c.getJSON(ctx, "/api/v1/regress", q, "judge the runs", &rep); err != nil {
		return err
	}
	// The experiments' texts are the server's: no control sequence
	// reaches the terminal, as with a local history.
	return nightly.New(nil, render.SafeAlways(s.a.Out), s.a.Err).Emit(ctx, &rep, nil, o)
}

// site has the server build the pages (GET /api/v1/site: a tar stream)
// and writes them into o.Dir as a local build does.
func (s serverReader) site(ctx context.Context, o site.Options) ([]site.Page, error) {
	q := url.Values{"experiment": o.Experiments}
	q.Set("window", fmt.Sprint(o.Rule.Window))
	q.Set("min_history", fmt.Sprint(o.Rule.MinHistory))
	q.Set("score", fmt.Sprint(o.Rule.Score))
	q.Set("floor", fmt.Sprint(o.Rule.Floor))
	resp, err := s.c.do(ctx, http.MethodGet, "/api/v1/site", q, nil, "", "read the site")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	fmt.Fprintf(s.a.Err, "report: the site of %s, built there\n", s.c.name())
	pages, err := site.Unpack(o.Dir, resp.Body)
	if err != nil && !errors.Is(err, site.ErrNotSite) && ctx.Err() == nil {
		return nil, &contract.ExitError{Code: contract.ExitInfra, Err: fmt.Errorf("%v (from %s)", err, s.c.name())}
	}
	return pages, err
}
