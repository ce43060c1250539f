// Package server is xrun serve: an HTTP service that keeps a team's
// results history, which runners post their results.json to (the
// XRUN_POST_URL of internal/post) and the history's readers read. It runs
// on the history's own code (client/history), on SQLite or PostgreSQL.
//
// Every request but the health check carries a bearer token of a scope
// (post, read, admin; tokens.go). A token is never written to a log, a
// URL or an error: the log names a token by its name.
package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/flat"
	"github.com/xrun-dev/xrun/client/history"
)

// DefaultMaxBody caps a posted results.json: a run at the case cap is
// 170 MB of JSON.
const DefaultMaxBody = 256 << 20

// ResultsPath is where runners post their results (XRUN_POST_URL is the
// server's address and this path).
const ResultsPath = "/api/v1/results"

// MissingPath answers which of the jobs a client names the server has no
// run of (xrun history push asks before it posts).
const MissingPath = "/api/v1/results/missing"

// MaxMissing is the most job ids one question to MissingPath may name.
const MaxMissing = 10000

// Options tunes a Server. Zero values mean the defaults.
type Options struct {
	// MaxBody is the most bytes a post may have (default DefaultMaxBody).
	MaxBody int64
	// Log gets a line per request; nil: none.
	Log *log.Logger
	// TLSCert and TLSKey, when both are set, are the PEM files of the
	// certificate (with its chain) and key Run serves HTTPS with.
	TLSCert, TLSKey string
}

// Server serves one results history.
type Server struct {
	h    *history.Store
	o    Options
	mux  *http.ServeMux
	dash *dashboard
}

// New makes a server of the history h.
func New(h *history.Store, o Options) *Server {
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	s := &Server{h: h, o: o, mux: http.NewServeMux(), dash: newDashboard()}
	s.mux.HandleFunc("GET /healthz", s.health)
	s.mux.HandleFunc("POST "+ResultsPath, s.auth(ScopePost, s.postResults))
	s.mux.HandleFunc("POST "+MissingPath, s.auth(ScopePost, s.missingJobs))
	s.mux.HandleFunc("GET /api/v1/history", s.auth(ScopeRead, s.getHistory))
	s.mux.HandleFunc("GET /api/v1/runs", s.auth(ScopeRead, s.getRuns))
	s.mux.HandleFunc("GET /api/v1/regress", s.auth(ScopeRead, s.getRegress))
	s.mux.HandleFunc("GET /api/v1/site", s.auth(ScopeRead, s.getSite))
	// The dashboard (dashboard.go): every other page, for a signed-in
	// browser.
	s.mux.HandleFunc("GET /", s.servePage)
	s.mux.HandleFunc("POST /login", s.login)
	s.mux.HandleFunc("POST /logout", s.logout)
	s.mux.HandleFunc("GET /api/v1/runs/{job}", s.auth(ScopeRead, s.getJob))
	s.mux.HandleFunc("GET /api/v1/runs/{job}/results", s.auth(ScopeRead, s.getResults))
	return s
}

// reply is every answer's body: a status word and one sentence, with what
// a post stored.
type reply struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	*history.Imported
}

// ServeHTTP serves a request and logs it: the method, the path (never
// the query), the answer's status, the token's name and the time taken.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w, code: http.StatusOK}
	s.mux.ServeHTTP(rec, r)
	if s.o.Log != nil {
		who := rec.token
		if who == "" {
			who = "-"
		}
		s.o.Log.Printf("%s %s %d token=%s %s", r.Method, r.URL.Path, rec.code, who, time.Since(start).Round(time.Millisecond))
	}
}

// recorder keeps the status a handler answered and the token's name, for
// the log.
type recorder struct {
	http.ResponseWriter
	code  int
	token string
}

func (r *recorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, reply{Status: "ok", Message: "the server is up."})
}

// auth lets a request through to h when its bearer token is known and
// its scope allows need.
func (s *Server) auth(need string, h func(http.ResponseWriter, *http.Request, history.Token)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		secret, ok := bearer(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="xrun"`)
			writeJSON(w, http.StatusUnauthorized, reply{Status: "unauthorized",
				Message: "this request needs a token in the Authorization header (Bearer); xrun serve token add makes one."})
			return
		}
		t, ok, err := s.h.TokenByHash(hashToken(secret))
		if err != nil {
			s.storageError(w, "read tokens", err)
			return
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="xrun", error="invalid_token"`)
			writeJSON(w, http.StatusUnauthorized, reply{Status: "unauthorized",
				Message: "the token is not known to this server: check XRUN_POST_TOKEN or the config's server token."})
			return
		}
		if rec, ok := w.(*recorder); ok {
			rec.token = t.Name
		}
		if !allows(t.Scope, need) {
			writeJSON(w, http.StatusForbidden, reply{Status: "forbidden",
				Message: fmt.Sprintf("token %s has scope %s, and this request needs %s (or admin).", t.Name, t.Scope, need)})
			return
		}
		h(w, r, t)
	}
}

// bearer is the request's bearer token, from the Authorization header
// only: a token in a URL ends up in proxies' and browsers' logs.
func bearer(r *http.Request) (string, bool) {
	v := r.Header.Get("Authorization")
	scheme, secret, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	secret = strings.TrimSpace(secret)
	return secret, secret != ""
}

// postResults stores a posted results.json. It is read and checked as
// xrun history import reads a file (flat.Read: the schema version, the
// bounds of every figure and name), within MaxBody bytes, and stored in
// one transaction by job id: a post of a job already stored replaces its
// run, so a retry or a duplicate never makes a second one.
func (s *Server) postResults(w http.ResponseWriter, r *http.Request, t history.Token) {
	body := &capped{r: http.MaxBytesReader(w, r.Body, s.o.MaxBody)}
	// The post is kept as it came, compressed as it is read, for the
	// readers that need the whole run (GET /api/v1/runs/JOB/results).
	var kept bytes.Buffer
	// BestSpeed: the default level took half of a large post's reading
	// (2.4 s of 4.7 for 94 MB) to keep it 26 MB rather than 29.
	gz, _ := gzip.NewWriterLevel(&kept, gzip.BestSpeed)
	res, rows, err := flat.Read(io.TeeReader(body, gz))
	if err == nil {
		_, err = io.Copy(gz, body) // what follows the object: white space
	}
	if err == nil {
		err = gz.Close()
	}
	if body.over {
		writeJSON(w, http.StatusRequestEntityTooLarge, reply{Status: "refused",
			Message: fmt.Sprintf("the results are larger than the %d bytes this server takes (xrun serve --max-body).", s.o.MaxBody)})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, reply{Status: "refused", Message: sentence("the results were refused: " + err.Error())})
		return
	}
	if res.JobID == "" {
		writeJSON(w, http.StatusUnprocessableEntity, reply{Status: "refused",
			Message: "the results have no job_id, which the server keeps runs by: post the results of an xrun job, or import this file with xrun history import."})
		return
	}
	im, err := s.h.ImportRows(r.Context(), res, rows, history.Source{Origin: history.SourcePost + t.Name, ByJob: true, Results: kept.Bytes()})
	switch {
	case errors.Is(err, history.ErrRunning):
		writeJSON(w, http.StatusUnprocessableEntity, reply{Status: "refused", Message: sentence(err.Error())})
		return
	case history.IsRefused(err):
		// Not retried: the same results would be refused again.
		writeJSON(w, http.StatusBadRequest, reply{Status: "refused", Message: sentence("the database refused the results: " + err.Error())})
		return
	case err != nil:
		s.storageError(w, "store job "+res.JobID, err)
		return
	}
	s.dash.posted()
	if im.Replaced {
		writeJSON(w, http.StatusOK, reply{Status: "replaced", Imported: &im,
			Message: fmt.Sprintf("job %s was stored already; its run now holds this post's %d points.", im.JobID, im.Points)})
		return
	}
	writeJSON(w, http.StatusCreated, reply{Status: "stored", Imported: &im,
		Message: fmt.Sprintf("stored job %s of %s: %d points.", im.JobID, im.Experiment, im.Points)})
}

// Missing is the question to MissingPath and its answer: the job ids
// asked about, and those of them the server has no run of.
type Missing struct {
	JobIDs  []string `json:"job_ids,omitempty"`
	Missing []string `json:"missing"`
}

// missingJobs answers which of the job ids posted the server lacks. It
// takes a post token: a client that holds one and kept results that did
// not reach the server learns what to post, and nothing else of the
// history (the ids are its own jobs', and the answer names only them).
func (s *Server) missingJobs(w http.ResponseWriter, r *http.Request, _ history.Token) {
	var q Missing
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	if err := dec.Decode(&q); err != nil {
		writeJSON(w, http.StatusBadRequest, reply{Status: "refused",
			Message: fmt.Sprintf(`the question was refused: give {"job_ids": [...]}, at most %d ids in 1 MiB (%v).`, MaxMissing, err)})
		return
	}
	if len(q.JobIDs) > MaxMissing {
		writeJSON(w, http.StatusBadRequest, reply{Status: "refused",
			Message: fmt.Sprintf("the question names %d jobs: ask about at most %d at once.", len(q.JobIDs), MaxMissing)})
		return
	}
	a := Missing{Missing: []string{}}
	for _, id := range q.JobIDs {
		runs, err := s.h.RunsOfJob(id)
		if err != nil {
			s.storageError(w, "read runs", err)
			return
		}
		if len(runs) == 0 {
			a.Missing = append(a.Missing, id)
		}
	}
	writeJSON(w, http.StatusOK, a)
}

// capped is a post's body that remembers whether it ran past the cap,
// whichever error the decoder made of that.
type capped struct {
	r    io.Reader
	over bool
}

func (c *capped) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		c.over = true
	}
	return n, err
}

// storageError answers a failure of the database: 503 with Retry-After,
// which a runner's post retries with backoff, as whatever went wrong
// (PostgreSQL restarting, a locked or full disk) is the server's.
func (s *Server) storageError(w http.ResponseWriter, what string, err error) {
	if s.o.Log != nil {
		s.o.Log.Printf("%s: %v", what, err)
	}
	w.Header().Set("Retry-After", "5")
	writeJSON(w, http.StatusServiceUnavailable, reply{Status: "unavailable",
		Message: "the server could not reach its database; try again shortly (its log says why)."})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// sentence is msg as one sentence: its first letter as it is, a full
// stop at its end.
func sentence(msg string) string {
	msg = strings.TrimSpace(msg)
	if msg != "" && !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg
}

// Run serves s at addr until ctx is done, then stops taking requests and
// waits up to grace for those in flight.
func Run(ctx context.Context, s *Server, addr string, grace time.Duration, ready func(addr string)) error {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		// A post at the cap over a slow link takes a while; a client
		// that sends nothing for this long is gone.
		ReadTimeout: 10 * time.Minute,
		IdleTimeout: 2 * time.Minute,
	}
	if s.o.Log != nil {
		srv.ErrorLog = s.o.Log
	}
	if (s.o.TLSCert == "") != (s.o.TLSKey == "") {
		return errors.New("give both --tls-cert and --tls-key, or neither")
	}
	if s.o.TLSCert != "" {
		// Loaded here, before listening, so that a wrong file stops the
		// start with its reason instead of failing every handshake.
		cert, err := tls.LoadX509KeyPair(s.o.TLSCert, s.o.TLSKey)
		if err != nil {
			return fmt.Errorf("load the certificate %s and key %s: %w", s.o.TLSCert, s.o.TLSKey, err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := listen(addr)
	if err != nil {
		return err
	}

	if ready != nil {
		ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			errc <- srv.ServeTLS(ln, "", "") // the certificate is TLSConfig's
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("serve on %s: %w", addr, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	defer s.Close()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("stop serving: %w", err)
	}
	return nil
}
