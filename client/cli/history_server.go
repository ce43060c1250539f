package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/nightly"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/contract"
)

// EnvServer names the variable that points the history's readers at an
// xrun serve (--server), and EnvServerToken the one that holds its read
// token: a token on the command line would be in the shell's history and
// in ps.
const (
	EnvServer      = "XRUN_SERVER"
	EnvServerToken = "XRUN_SERVER_TOKEN"
)

// readServer is a client of the xrun serve at base, for the history's
// readers' --server, with the read token of XRUN_SERVER_TOKEN, else the
// config's read token when base is the config's server (the config's
// token goes to no other server).
func (a *App) readServer(base string) (*serverClient, error) {
	token := a.getenv(EnvServerToken)
	if token == "" {
		path := connect.ConfigPath(a.getenv)
		cfg, err := connect.LoadServer(path)
		if err != nil {
			return nil, usageError("%v", err)
		}
		if cfg != nil && sameServer(cfg.URL, base) {
			if token, err = cfg.ReaderToken(path, a.getenv); err != nil {
				return nil, usageError("%v", err)
			}
		}
	}
	if token == "" {
		return nil, usageError("--server needs a read token in %s, or in read_token_file: of the config's server: when it is that server (xrun serve token add --scope read NAME makes one)", EnvServerToken)
	}
	return newServerClient(base, token, 10*time.Minute)
}

// historyFromServer prints what xrun history prints, read from the xrun
// serve at base: the server judges the series with the same code and
// renders them as JSON, CSV or the table; this streams its answer out.
func historyFromServer(ctx context.Context, a *App, c *serverClient, q nightly.Query, o nightly.ShowOptions) error {
	if o.Plot != "" {
		return usageError("--plot draws from a local history; it does not apply with --server")
	}
	v := url.Values{}
	for k, s := range map[string]string{"experiment": q.Experiment, "impl": q.Implementation, "host": q.Host, "gpu": q.GPU, "since": q.Since} {
		if s != "" {
			v.Set(k, s)
		}
	}
	for _, c := range q.Cases {
		v.Add("case", c)
	}
	switch {
	case o.JSON:
		v.Set("format", "json")
	case o.CSV:
		v.Set("format", "csv")
	default:
		v.Set("format", "text")
		v.Set("last", strconv.Itoa(o.Last))
	}
	resp, err := c.do(ctx, http.MethodGet, "/api/v1/history", v, nil, "", "read the history")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// The experiments' texts are the server's, as a local history's are
	// the files': no control sequence reaches the terminal.
	if _, err := io.Copy(render.SafeAlways(a.Out), resp.Body); err != nil {
		return &contract.ExitError{Code: contract.ExitInfra, Err: fmt.Errorf("read the history from %s: %v", c.name(), err)}
	}
	return nil
}
