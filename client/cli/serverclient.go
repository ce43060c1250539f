package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/post"
)

// serverClient asks an xrun serve at base with a bearer token. It is the
// one HTTP client of the commands that talk to a server (history push,
// the readers' --server): it follows no redirect, which would carry the
// token elsewhere, and its errors name the server without its user info
// or query and never the token.
type serverClient struct {
	base  string // the server's address, without a trailing /
	token string
	http  *http.Client
}

// newServerClient checks base (an http:// or https:// URL) and makes a
// client of it that gives up on an answer after timeout.
func newServerClient(base, token string, timeout time.Duration) (*serverClient, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageError("--server %s: give the server's http:// or https:// URL", post.Redact(base))
	}
	return &serverClient{
		base:  strings.TrimSuffix(base, "/"),
		token: token,
		http: &http.Client{Timeout: timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}, nil
}

// name is the server's address as errors show it.
func (c *serverClient) name() string { return post.Redact(c.base) }

// do sends a request for path (with query, and body of contentType when
// not nil) and returns the answer when its status is 200. Otherwise it
// returns the server's message as an error: exit 4 for a server that
// cannot be reached or fails (5xx), exit 3 for a request it refused (a
// token, a filter, a job it does not have). what says what was asked
// ("read the history").
func (c *serverClient) do(ctx context.Context, method, path string, query url.Values, body io.Reader, contentType, what string) (*http.Response, error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, usageError("--server %s: %v", c.name(), err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		if ue, ok := err.(*url.Error); ok {
			err = ue.Err // url.Error repeats the URL
		}
		return nil, &contract.ExitError{Code: contract.ExitInfra, Err: fmt.Errorf("%s from %s: %v (is xrun serve running there?)", what, c.name(), err)}
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	var r struct {
		Message string `json:"message"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(data, &r) != nil || r.Message == "" {
		r.Message = http.StatusText(resp.StatusCode)
	}
	err = fmt.Errorf("server %s answered %d: %s", c.name(), resp.StatusCode, strings.TrimSuffix(r.Message, "."))
	if resp.StatusCode >= 500 {
		return nil, &contract.ExitError{Code: contract.ExitInfra, Err: err}
	}
	return nil, &contract.ExitError{Code: contract.ExitUsage, Err: err}
}

// getJSON asks for path with query and decodes the JSON answer into v.
func (c *serverClient) getJSON(ctx context.Context, path string, query url.Values, what string, v any) error {
	resp, err := c.do(ctx, http.MethodGet, path, query, nil, "", what)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return &contract.ExitError{Code: contract.ExitInfra, Err: fmt.Errorf("%s from %s: the answer is not what this xrun reads (%v): is the server an xrun serve of this version?", what, c.name(), err)}
	}
	return nil
}
