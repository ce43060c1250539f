package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/nightly"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/internal/post"
)

// EnvServer names the variable that points the history's readers at an
// xrun serve (--server), and EnvServerToken the one that holds its read
// token: a token on the command line would be in the shell's history and
// in ps.
const (
	EnvServer      = "XRUN_SERVER"
	EnvServerToken = "XRUN_SERVER_TOKEN"
)

// historyFromServer prints what xrun history prints, read from the xrun
// serve at base: the server judges the series with the same code and
// renders them as JSON, CSV or the table; this streams its answer out.
func (a *App) historyFromServer(ctx context.Context, base string, q nightly.Query, o nightly.ShowOptions) error {
	if o.Plot != "" {
		return usageError("--plot draws from a local history; it does not apply with --server")
	}
	token := a.getenv(EnvServerToken)
	if token == "" {
		return usageError("--server needs a read token in %s (xrun serve token add --scope read NAME makes one)", EnvServerToken)
	}
	u, err := url.Parse(strings.TrimSuffix(base, "/") + "/api/v1/history")
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError("--server %s: give the server's http:// or https:// URL", post.Redact(base))
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
	u.RawQuery = v.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return usageError("--server %s: %v", post.Redact(base), err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	// No redirect is followed: it would carry the token elsewhere.
	client := &http.Client{Timeout: 10 * time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		if ue, ok := err.(*url.Error); ok {
			err = ue.Err // url.Error repeats the URL
		}
		return &ExitError{Code: ExitInfra, Err: fmt.Errorf("read the history from %s: %v (is xrun serve running there?)", post.Redact(base), err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var r struct {
			Message string `json:"message"`
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(data, &r) != nil || r.Message == "" {
			r.Message = http.StatusText(resp.StatusCode)
		}
		msg := strings.TrimSuffix(r.Message, ".")
		err := fmt.Errorf("server %s answered %d: %s", post.Redact(base), resp.StatusCode, msg)
		if resp.StatusCode >= 500 {
			return &ExitError{Code: ExitInfra, Err: err}
		}
		return &ExitError{Code: ExitUsage, Err: err}
	}
	// The experiments' texts are the server's, as a local history's are
	// the files': no control sequence reaches the terminal.
	if _, err := io.Copy(render.SafeAlways(a.Out), resp.Body); err != nil {
		return &ExitError{Code: ExitInfra, Err: fmt.Errorf("read the history from %s: %v", post.Redact(base), err)}
	}
	return nil
}
