package post

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const token = "s3cr3t-t0ken-value"

type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logs) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func fast(l *logs) Options {
	return Options{Attempts: 5, Base: time.Millisecond, Max: 4 * time.Millisecond, Logf: l.logf}
}

func TestRetriesThenSucceeds(t *testing.T) {
	var calls atomic.Int32
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" ||
			r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "bad request shape", http.StatusBadRequest)
			return
		}
		if n < 3 {
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		}
		got, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	var l logs
	body := []byte(`{"schema_version":1}`)
	if err := Post(context.Background(), srv.URL+"/results", token, body, fast(&l)); err != nil {
		t.Fatalf("Post: %v (log:\n%s)", err, l.text())
	}
	if calls.Load() != 3 || string(got) != string(body) {
		t.Errorf("calls = %d, body = %q", calls.Load(), got)
	}
	if len(l.lines) != 2 || !strings.Contains(l.lines[0], "503") || !strings.Contains(l.lines[0], "attempt 1/5") {
		t.Errorf("log lines = %q", l.lines)
	}
}

func TestNoTokenNoHeader(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["Authorization"]; ok {
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	if err := Post(context.Background(), srv.URL, "", []byte("{}"), Options{}); err != nil {
		t.Fatal(err)
	}
}

func TestClientErrorIsNotRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "unknown job", http.StatusNotFound)
	}))
	defer srv.Close()
	var l logs
	err := Post(context.Background(), srv.URL, token, []byte("{}"), fast(&l))
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusNotFound || !strings.Contains(se.Body, "unknown job") {
		t.Fatalf("err = %v, want a 404 StatusError", err)
	}
	if calls.Load() != 1 || len(l.lines) != 1 {
		t.Errorf("calls = %d, log = %q; want one attempt", calls.Load(), l.lines)
	}
}

// A server that echoes the Authorization header into its errors must not
// make the token appear in logs or in the returned error.
func TestTokenNeverLogged(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "rejected "+r.Header.Get("Authorization"), http.StatusBadGateway)
	}))
	defer srv.Close()
	var l logs
	err := Post(context.Background(), srv.URL+"/jobs/"+token+"?key="+token, token, []byte("{}"), fast(&l))
	if err == nil {
		t.Fatal("Post to a failing server succeeded")
	}
	if len(l.lines) != 5 {
		t.Errorf("log has %d lines, want 5", len(l.lines))
	}
	for _, s := range []string{l.text(), err.Error()} {
		if strings.Contains(s, token) {
			t.Errorf("token leaked: %s", s)
		}
	}
	if !strings.Contains(err.Error(), "gave up after 5 attempts") || !strings.Contains(err.Error(), "502") {
		t.Errorf("err = %v", err)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	var calls atomic.Int32
	var first, second time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			first = time.Now()
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		second = time.Now()
	}))
	defer srv.Close()
	var l logs
	o := Options{Base: time.Millisecond, Max: 3 * time.Second, Logf: l.logf}
	if err := Post(context.Background(), srv.URL, token, []byte("{}"), o); err != nil {
		t.Fatal(err)
	}
	if gap := second.Sub(first); gap < 900*time.Millisecond {
		t.Errorf("retried after %s, want >= 1s (Retry-After)", gap)
	}
	if !strings.Contains(l.text(), "429") || !strings.Contains(l.text(), "retrying in 1s") {
		t.Errorf("log = %q", l.text())
	}
}

func TestNetworkErrorRetried(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close() // nothing listens any more
	var l logs
	o := fast(&l)
	o.Attempts = 3
	err := Post(context.Background(), u, token, []byte("{}"), o)
	if err == nil || !strings.Contains(err.Error(), "gave up after 3 attempts") {
		t.Fatalf("err = %v", err)
	}
	if len(l.lines) != 3 {
		t.Errorf("log = %q, want 3 lines", l.lines)
	}
}

func TestContextStopsRetries(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := Post(ctx, srv.URL, token, []byte("{}"), Options{Base: 10 * time.Second, Max: 10 * time.Second})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("Post returned after %s, want soon after the context ended", el)
	}
}

func TestRetryAfterParse(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"3", 3 * time.Second}, {"-1", 0}, {"soon", 0},
		{now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	} {
		if got := retryAfter(c.in, now); got != c.want {
			t.Errorf("retryAfter(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestBackoffBounds(t *testing.T) {
	o := withDefaults(Options{})
	for attempt, max := range map[int]time.Duration{1: 500 * time.Millisecond, 2: time.Second, 4: 4 * time.Second, 5: 8 * time.Second, 40: 8 * time.Second} {
		for i := 0; i < 50; i++ {
			d := backoff(o, attempt)
			if d < max/2 || d > max {
				t.Fatalf("backoff(%d) = %s, want in [%s, %s]", attempt, d, max/2, max)
			}
		}
	}
}

// A redirect to another port of the same host (where Go's client would
// forward the Authorization header) is not followed: the token reaches only
// the URL given, and the error names where the server pointed, redacted.
func TestRedirectNotFollowed(t *testing.T) {
	var other atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.Add(1)
		if r.Header.Get("Authorization") != "" {
			t.Errorf("the redirect target got the token")
		}
	}))
	defer target.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/hook?sig=abc", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	for _, c := range []*http.Client{nil, {Timeout: time.Second}} {
		o := fast(&logs{})
		o.Client = c
		err := Post(context.Background(), srv.URL, token, []byte("{}"), o)
		var rerr *RedirectError
		if !errors.As(err, &rerr) || rerr.Code != http.StatusTemporaryRedirect {
			t.Fatalf("err = %v, want a RedirectError", err)
		}
		if strings.Contains(err.Error(), "sig=abc") || !strings.Contains(err.Error(), target.URL+"/hook?...") {
			t.Errorf("err = %v: want the target's URL without its query", err)
		}
	}
	if other.Load() != 0 {
		t.Errorf("the redirect target got %d requests", other.Load())
	}
}

// A server that accepts the connection and never answers costs one
// request timeout per attempt, not forever.
func TestSilentServerTimesOut(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-stop
	}))
	defer srv.Close()
	defer close(stop)
	o := fast(&logs{})
	o.Attempts = 2
	o.Client = &http.Client{Timeout: 100 * time.Millisecond}
	start := time.Now()
	err := Post(context.Background(), srv.URL, "", []byte("{}"), o)
	if err == nil {
		t.Fatal("Post to a silent server succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s", d)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pw@hooks.example/x?token=1": "https://hooks.example/x?...",
		"http://h:8080/a":                         "http://h:8080/a",
		"::bad":                                   "the URL",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
