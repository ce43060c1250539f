package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/server"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/post"
)

type historyPushOptions struct {
	server string
	json   bool
}

// pushReport is what history push did, as --json prints it.
type pushReport struct {
	Server string `json:"server"`
	// Jobs are the finished jobs of the store with results; Present
	// those the server had already.
	Jobs    int          `json:"jobs"`
	Present int          `json:"present"`
	Pushed  []string     `json:"pushed"`
	Failed  []pushFailed `json:"failed"`
}

type pushFailed struct {
	JobID string `json:"job_id"`
	Error string `json:"error"`
}

func newHistoryPushCommand(a *App) *cli.Command {
	var o historyPushOptions
	return &cli.Command{
		Name:  "push",
		Usage: "post to an xrun serve the results of every finished job in the job store that the server lacks",
		Description: `A runner that could not reach the server when its job ended kept its results
in the job store all the same. push asks the server which of the store's
finished jobs it has no run of, and posts those results.json, one by one, as
the runner would have (retrying with backoff on a network error, a 429 or a
5xx). The server keeps runs by job id, so push can run any number of times:
a job the server has is not sent again.

The server is --server URL, else the url of the server: in xrun's config; the
post token is XRUN_POST_TOKEN, else the config's token when the server is the
config's (docs/server.md). A line per job goes to stderr, then a summary;
--json prints the summary on stdout instead. A job that could not be pushed
is named with the reason, and the exit code is then 4.

Examples:
  xrun history push
  XRUN_POST_TOKEN=xrun_... xrun history push --server https://xrun.lab.example
  xrun history push --json | jq '.pushed | length'`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "server", Usage: "the xrun serve at `URL` (default: the url of server: in xrun's config)", Destination: &o.server},
			&cli.BoolFlag{Name: "json", Usage: "print the summary as JSON on stdout", Destination: &o.json},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError("history push takes no arguments, got %d (it pushes every finished job the server lacks)", c.NArg())
			}
			return runHistoryPush(c.Context, a, o)
		},
	}
}

// pushTarget is the server push posts to and the post token it posts
// with: the config's token goes to the config's server only.
func (a *App) pushTarget(flag string) (base, token string, err error) {
	path := connect.ConfigPath(a.getenv)
	cfg, err := connect.LoadServer(path)
	if err != nil {
		return "", "", usageError("%v", err)
	}
	base = flag
	if base == "" && cfg != nil {
		base = cfg.URL
	}
	if base == "" {
		return "", "", usageError("no server to push to: give --server URL, or server: in %s (docs/server.md)", path)
	}
	u, perr := url.Parse(base)
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", usageError("--server %s: give the server's http:// or https:// URL", post.Redact(base))
	}
	token = a.getenv(contract.EnvPostToken)
	if token == "" && cfg != nil && cfg.HasPostToken() && sameServer(cfg.URL, base) {
		if token, err = cfg.PostToken(path, a.getenv); err != nil {
			return "", "", usageError("%v", err)
		}
	}
	if token == "" {
		return "", "", usageError("no post token for %s: set %s (xrun serve token add --scope post NAME makes one), or make it the server: of %s", post.Redact(base), contract.EnvPostToken, path)
	}
	return base, token, nil
}

// sameServer reports whether two addresses name one server, whether or
// not either ends with / or the results endpoint.
func sameServer(a, b string) bool {
	return postURL(a) == postURL(b)
}

func runHistoryPush(ctx context.Context, a *App, o historyPushOptions) error {
	base, token, err := a.pushTarget(o.server)
	if err != nil {
		return err
	}
	st, err := a.Store()
	if err != nil {
		return err
	}
	jobs, err := st.List()
	if err != nil {
		return &contract.ExitError{Code: contract.ExitInfra, Err: err}
	}
	// Oldest first, as they ran: a series on the server grows in order.
	slices.Reverse(jobs)
	byID := map[string]*store.Job{}
	var ids []string
	for _, j := range jobs {
		if store.Final(j.Status) && st.Has(j.ID, store.ResultsFile) {
			byID[j.ID] = j
			ids = append(ids, j.ID)
		}
	}
	rep := pushReport{Server: post.Redact(base), Jobs: len(ids), Pushed: []string{}, Failed: []pushFailed{}}
	var missing []string
	for start := 0; start < len(ids); start += server.MaxMissing {
		batch := ids[start:min(start+server.MaxMissing, len(ids))]
		m, err := askMissing(ctx, base, token, batch)
		if err != nil {
			return &contract.ExitError{Code: contract.ExitInfra, Err: err}
		}
		missing = append(missing, m...)
	}
	// Only the jobs asked about: the server names no other.
	missing = slices.DeleteFunc(missing, func(id string) bool { return byID[id] == nil })
	rep.Present = len(ids) - len(missing)
	for i, id := range missing {
		j := byID[id]
		// A copy changed since the job ended is not pushed as its results:
		// what is pushed is the bytes that were checked.
		data, err := st.ReadResults(j)
		if err == nil {
			err = post.Post(ctx, postURL(base), token, data, post.Options{})
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			rep.Failed = append(rep.Failed, pushFailed{JobID: id, Error: err.Error()})
			fmt.Fprintf(a.Err, "[%d/%d] job %s (%s): not pushed: %v\n", i+1, len(missing), id, j.Experiment, err)
			continue
		}
		rep.Pushed = append(rep.Pushed, id)
		fmt.Fprintf(a.Err, "[%d/%d] job %s (%s): pushed\n", i+1, len(missing), id, j.Experiment)
	}
	if o.json {
		if err := printJSON(a, rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.Err, "pushed %d %s to %s; %d of the store's %d finished %s with results %s there already\n",
			len(rep.Pushed), plural(len(rep.Pushed), "job", "jobs"), rep.Server, rep.Present, rep.Jobs, plural(rep.Jobs, "job", "jobs"), plural(rep.Present, "was", "were"))
	}
	if len(rep.Failed) > 0 {
		return &contract.ExitError{Code: contract.ExitInfra, Err: fmt.Errorf("%d %s could not be pushed (the reasons are above): run xrun history push again once the server takes them",
			len(rep.Failed), plural(len(rep.Failed), "job", "jobs"))}
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// askMissing asks the server at base which of ids it has no run of.
func askMissing(ctx context.Context, base, token string, ids []string) ([]string, error) {
	q, err := json.Marshal(server.Missing{JobIDs: ids})
	if err != nil {
		return nil, err
	}
	c, err := newServerClient(strings.TrimSuffix(strings.TrimSuffix(base, "/"), server.ResultsPath), token, 2*time.Minute)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, http.MethodPost, server.MissingPath, nil, bytes.NewReader(q), "application/json", "read which jobs it lacks")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var m server.Missing
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&m); err != nil {
		return nil, fmt.Errorf("server %s answered with what is not a list of jobs: %v (is it an xrun serve of this version?)", c.name(), err)
	}
	return m.Missing, nil
}
