// Package post sends a JSON document to a URL with a bearer token, retrying
// with exponential backoff: the runner's results.json to the URL the job was
// given (XRUN_POST_URL), and the client's alert to a webhook. Each request
// has a timeout, a redirect is refused (it would carry the token to another
// server), and no message shows the URL's user info, query or the token. A
// failed post never touches the document's file: the caller keeps it.
package post

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Options tunes Post. Zero values mean the defaults.
type Options struct {
	// Attempts is the number of tries in all (default 5).
	Attempts int
	// Base is the wait before the second try (default 500ms); each later
	// wait doubles, up to Max (default 8s), with full jitter in [d/2, d].
	Base, Max time.Duration
	// Client sends the requests (default: a client with a 30 s timeout per
	// request that follows no redirect). A client given here gets the same
	// redirect rule when it has none.
	Client *http.Client
	// What names the document in messages (default "results").
	What string
	// Logf gets one line per failed attempt; it never sees the token.
	Logf func(format string, args ...any)
}

// StatusError is a response the server refused with.
type StatusError struct {
	Code int
	Body string // the start of the response body
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("server answered %d %s", e.Code, http.StatusText(e.Code))
	}
	return fmt.Sprintf("server answered %d %s: %s", e.Code, http.StatusText(e.Code), e.Body)
}

// Post sends body to rawURL as application/json with "Authorization: Bearer
// token" when token is set. It retries on network errors, 429 and 5xx with
// exponential backoff and jitter, waiting at least as long as a Retry-After
// header asks (capped at Max), and stops at once on ctx's end or on any
// other 4xx.
func Post(ctx context.Context, rawURL, token string, body []byte, o Options) error {
	o = withDefaults(o)
	safeURL := Redact(rawURL)
	if token != "" {
		safeURL = strings.ReplaceAll(safeURL, token, "[token]")
	}
	var last error
	for attempt := 1; attempt <= o.Attempts; attempt++ {
		retry, wait, err := try(ctx, o.Client, rawURL, token, body)
		if err == nil {
			return nil
		}
		err = scrub(err, token)
		last = err
		if ctx.Err() != nil {
			return fmt.Errorf("post %s to %s: %w", o.What, safeURL, ctx.Err())
		}
		if !retry {
			o.Logf("post %s to %s: attempt %d/%d: %v (not retrying)", o.What, safeURL, attempt, o.Attempts, err)
			return fmt.Errorf("post %s to %s: %w", o.What, safeURL, err)
		}
		if attempt == o.Attempts {
			o.Logf("post %s to %s: attempt %d/%d: %v", o.What, safeURL, attempt, o.Attempts, err)
			break
		}
		d := backoff(o, attempt)
		if wait > d {
			d = min(wait, o.Max)
		}
		o.Logf("post %s to %s: attempt %d/%d: %v; retrying in %s", o.What, safeURL, attempt, o.Attempts, err, d.Round(time.Millisecond))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("post %s to %s: %w (last error: %v)", o.What, safeURL, ctx.Err(), err)
		case <-t.C:
		}
	}
	return fmt.Errorf("post %s to %s: gave up after %d attempts: %w", o.What, safeURL, o.Attempts, last)
}

func withDefaults(o Options) Options {
	if o.Attempts <= 0 {
		o.Attempts = 5
	}
	if o.Base <= 0 {
		o.Base = 500 * time.Millisecond
	}
	if o.Max <= 0 {
		o.Max = 8 * time.Second
	}
	if o.Max < o.Base {
		o.Max = o.Base
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Client.CheckRedirect == nil {
		c := *o.Client
		c.CheckRedirect = refuseRedirect
		o.Client = &c
	}
	if o.What == "" {
		o.What = "results"
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// backoff is the wait after the given failed attempt (1-based): Base*2^(n-1)
// capped at Max, jittered into [d/2, d] so that many jobs posting to one
// server do not retry in step.
func backoff(o Options, attempt int) time.Duration {
	d := o.Base << min(attempt-1, 30)
	if d <= 0 || d > o.Max {
		d = o.Max
	}
	half := d / 2
	return half + rand.N(half+1)
}

// try sends one request. retry says whether a failure is worth retrying;
// wait is the server's Retry-After, if any.
func try(ctx context.Context, c *http.Client, rawURL, token string, body []byte) (retry bool, wait time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return false, 0, fmt.Errorf("make request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) && uerr.Err != nil {
			err = uerr.Err // url.Error repeats the URL, which may hold credentials
		}
		return true, 0, err
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return false, 0, nil
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		rerr := &RedirectError{Code: resp.StatusCode}
		if loc, err := resp.Location(); err == nil {
			rerr.Location = Redact(loc.String())
		}
		return false, 0, rerr
	}
	serr := &StatusError{Code: resp.StatusCode, Body: strings.TrimSpace(string(snippet))}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		return true, retryAfter(resp.Header.Get("Retry-After"), time.Now()), serr
	}
	return false, 0, serr
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// RedirectError is a redirect the server answered with, which Post does not
// follow: the request carries a token, and a redirect may lead anywhere.
type RedirectError struct {
	Code     int
	Location string // redacted
}

func (e *RedirectError) Error() string {
	to := e.Location
	if to == "" {
		to = "another URL"
	}
	return fmt.Sprintf("server answered %d %s to %s; redirects are not followed (they would carry the token along): give that URL instead", e.Code, http.StatusText(e.Code), to)
}

// refuseRedirect stops a client at the first redirect, handing back the
// redirect response itself.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Redact drops user info and the query from a URL for messages: either may
// carry a secret.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" && u.Host == "" {
		return "the URL"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "..."
	}
	return u.String()
}

// scrub removes the token from an error's text, should a server echo it.
func scrub(err error, token string) error {
	if token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "[token]"))
}
