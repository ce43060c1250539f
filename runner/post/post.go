// Package post sends results.json to the URL the job was given
// (XRUN_POST_URL), with a bearer token, retrying with exponential backoff.
// A failed post never touches the results file: the caller keeps it.
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
	// Client sends the requests (default: a client with a 30 s timeout).
	Client *http.Client
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
	safeURL := redact(rawURL)
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
			return fmt.Errorf("post results to %s: %w", safeURL, ctx.Err())
		}
		if !retry {
			o.Logf("post results to %s: attempt %d/%d: %v (not retrying)", safeURL, attempt, o.Attempts, err)
			return fmt.Errorf("post results to %s: %w", safeURL, err)
		}
		if attempt == o.Attempts {
			o.Logf("post results to %s: attempt %d/%d: %v", safeURL, attempt, o.Attempts, err)
			break
		}
		d := backoff(o, attempt)
		if wait > d {
			d = min(wait, o.Max)
		}
		o.Logf("post results to %s: attempt %d/%d: %v; retrying in %s", safeURL, attempt, o.Attempts, err, d.Round(time.Millisecond))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("post results to %s: %w (last error: %v)", safeURL, ctx.Err(), err)
		case <-t.C:
		}
	}
	return fmt.Errorf("post results to %s: gave up after %d attempts: %w", safeURL, o.Attempts, last)
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

// redact drops user info and the query from a URL for messages: either may
// carry a secret.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "the results URL"
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
