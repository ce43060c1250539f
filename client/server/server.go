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
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/flat"
	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/nightly"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/client/site"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
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

// getHistory answers what xrun history prints: each series the query
// picks, with the regression rule's verdict on each run. The query takes
// the history command's filters (experiment, impl, case=K=V repeated,
// host, gpu, since) and its forms: format=json (the default, as --json),
// csv (as --csv) or text (the table, of each series' last runs, 10 unless
// last=N; 0 is all).
func (s *Server) getHistory(w http.ResponseWriter, r *http.Request, _ history.Token) {
	q := r.URL.Query()
	query := nightly.Query{Experiment: q.Get("experiment"), Implementation: q.Get("impl"), Cases: q["case"],
		Host: q.Get("host"), GPU: q.Get("gpu"), Since: q.Get("since")}
	f, err := query.Filter(time.Now())
	if err != nil {
		writeJSON(w, http.StatusBadRequest, reply{Status: "refused", Message: sentence(err.Error())})
		return
	}
	o := nightly.ShowOptions{Filter: f, Rule: nightly.DefaultRule(), Last: 10}
	contentType := "application/json"
	switch q.Get("format") {
	case "", "json":
		o.JSON = true
	case "csv":
		o.CSV, contentType = true, "text/csv; charset=utf-8"
	case "text":
		contentType = "text/plain; charset=utf-8"
		if v := q.Get("last"); v != "" {
			if o.Last, err = strconv.Atoi(v); err != nil || o.Last < 0 {
				writeJSON(w, http.StatusBadRequest, reply{Status: "refused", Message: fmt.Sprintf("last=%q: give a count of runs (0 for all).", v)})
				return
			}
		}
	default:
		writeJSON(w, http.StatusBadRequest, reply{Status: "refused", Message: fmt.Sprintf("format=%q: give json, csv or text.", q.Get("format"))})
		return
	}
	// The series are written as they are judged, one group at a time:
	// once the first is written the status is sent, so an error past it
	// cuts the answer short, which a JSON reader's decoder notices.
	lw := &lazyWriter{w: w, contentType: contentType}
	n := nightly.New(s.h, lw, io.Discard)
	err = n.Show(o)
	if err != nil && !lw.started {
		if strings.Contains(err.Error(), "has no run that matches") {
			writeJSON(w, http.StatusNotFound, reply{Status: "not_found", Message: sentence(err.Error())})
			return
		}
		s.storageError(w, "read history", err)
		return
	}
	if err != nil && s.o.Log != nil {
		s.o.Log.Printf("read history: %v (the answer was cut short)", err)
	}
}

// lazyWriter sends its content type and status 200 with the first
// bytes, so that an error before them can still answer otherwise.
type lazyWriter struct {
	w           http.ResponseWriter
	contentType string
	started     bool
}

func (l *lazyWriter) Write(p []byte) (int, error) {
	if !l.started {
		l.started = true
		l.w.Header().Set("Content-Type", l.contentType)
		l.w.WriteHeader(http.StatusOK)
	}
	return l.w.Write(p)
}

// getRegress answers xrun regress's report as JSON (nightly.Report): the
// runs of the jobs named (job=ID, repeated; none: the latest run of each
// experiment on each kind of machine and host) judged by the rule
// (window, min_history, score, floor; the defaults otherwise), with the
// outcome and advice read from the results.json each job posted. The
// client prints it as text, markdown or JSON, and makes its alert.
func (s *Server) getRegress(w http.ResponseWriter, r *http.Request, _ history.Token) {
	q := r.URL.Query()
	ru, msg := ruleOf(q)
	if msg != "" {
		writeJSON(w, http.StatusBadRequest, reply{Status: "refused", Message: msg})
		return
	}
	rep, err := nightly.New(s.h, io.Discard, io.Discard).JudgeKept(r.Context(), q["job"],
		func(job string) *result.Results { return keptHead(s.h, job) },
		func(job string) *result.Results { return KeptResults(s.h, job) }, ru)
	var ee *contract.ExitError
	switch {
	case errors.Is(err, history.ErrAmbiguous):
		writeJSON(w, http.StatusBadRequest, reply{Status: "refused", Message: sentence(err.Error())})
		return
	case errors.As(err, &ee) && ee.Code == contract.ExitUsage:
		writeJSON(w, http.StatusNotFound, reply{Status: "not_found", Message: sentence(err.Error())})
		return
	case err != nil:
		s.storageError(w, "judge runs", err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// ruleOf is the regression rule a query gives (window, min_history,
// score, floor; the defaults otherwise), or why it is refused.
func ruleOf(q url.Values) (regress.Rule, string) {
	ru := nightly.DefaultRule()
	for _, p := range []struct {
		key string
		i   *int
		f   *float64
	}{{"window", &ru.Window, nil}, {"min_history", &ru.MinHistory, nil}, {"score", nil, &ru.Score}, {"floor", nil, &ru.Floor}} {
		v := q.Get(p.key)
		if v == "" {
			continue
		}
		var err error
		if p.i != nil {
			*p.i, err = strconv.Atoi(v)
		} else {
			*p.f, err = strconv.ParseFloat(v, 64)
		}
		if err != nil {
			return ru, fmt.Sprintf("%s=%q: give a number.", p.key, v)
		}
	}
	if ru.Window < 1 || ru.MinHistory < 1 || ru.MinHistory > ru.Window || ru.Score < 0 || ru.Floor < 0 {
		return ru, "the rule needs 1 <= min_history <= window, score >= 0 and floor >= 0."
	}
	return ru, ""
}

// getSite answers the pages of xrun report --html, built from the
// history for this request, as a tar stream (site.Archive): of the
// experiments named (experiment=NAME, repeated; none: all), with the
// verdicts of the rule the query gives (as regress's). xrun report
// --server writes them out.
func (s *Server) getSite(w http.ResponseWriter, r *http.Request, _ history.Token) {
	q := r.URL.Query()
	ru, msg := ruleOf(q)
	if msg != "" {
		writeJSON(w, http.StatusBadRequest, reply{Status: "refused", Message: msg})
		return
	}
	tmp, err := os.MkdirTemp("", "xrun-serve-report-")
	if err != nil {
		s.storageError(w, "build a site", err)
		return
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "site")
	pages, err := site.Build(s.h, site.Options{Dir: dir, Rule: ru, Experiments: q["experiment"], Context: r.Context(),
		Results: s.keptForSite})
	switch {
	case errors.Is(err, site.ErrEmpty) && len(q["experiment"]) > 0:
		writeJSON(w, http.StatusNotFound, reply{Status: "not_found", Message: fmt.Sprintf("the results history has no run of %v; xrun history lists what it has.", q["experiment"])})
		return
	case errors.Is(err, site.ErrEmpty):
		writeJSON(w, http.StatusNotFound, reply{Status: "not_found", Message: "the results history is empty: its runners have posted nothing yet."})
		return
	case err != nil:
		s.storageError(w, "build a site", err)
		return
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.WriteHeader(http.StatusOK)
	if err := site.Archive(w, dir, pages); err != nil && s.o.Log != nil {
		s.o.Log.Printf("send a site: %v (the answer was cut short)", err)
	}
}

// getRuns lists the runs of the history (of one experiment, with
// ?experiment=), oldest first.
func (s *Server) getRuns(w http.ResponseWriter, r *http.Request, _ history.Token) {
	runs, err := s.h.Runs(r.URL.Query().Get("experiment"))
	if err != nil {
		s.storageError(w, "read runs", err)
		return
	}
	if runs == nil {
		runs = []history.Run{}
	}
	writeJSON(w, http.StatusOK, runs)
}

// getJob answers the runs of one job (one, unless it was imported from
// two starts before it was posted).
func (s *Server) getJob(w http.ResponseWriter, r *http.Request, _ history.Token) {
	job := r.PathValue("job")
	runs, err := s.h.FindRuns(job)
	if errors.Is(err, history.ErrAmbiguous) {
		writeJSON(w, http.StatusBadRequest, reply{Status: "refused", Message: sentence(err.Error())})
		return
	}
	if err != nil {
		s.storageError(w, "read runs", err)
		return
	}
	if len(runs) == 0 {
		writeJSON(w, http.StatusNotFound, reply{Status: "not_found", Message: fmt.Sprintf("job %q is not in this server's history.", job)})
		return
	}
	writeJSON(w, http.StatusOK, runs)
}

// getResults answers the results.json of a job as it was posted (its
// bytes, which xrun results --json prints); 404 when the server has no
// post of it (a run it lacks, or one imported into its history from a
// file).
func (s *Server) getResults(w http.ResponseWriter, r *http.Request, _ history.Token) {
	job := r.PathValue("job")
	body, ok, err := s.h.ResultsFile(job)
	if err != nil {
		s.storageError(w, "read results", err)
		return
	}
	if !ok {
		writeJSON(w, http.StatusNotFound, reply{Status: "not_found",
			Message: fmt.Sprintf("job %q has no results.json on this server: its runner did not post it here (xrun history push sends it).", job)})
		return
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		s.storageError(w, "read results of job "+job, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, zr); err != nil && s.o.Log != nil {
		s.o.Log.Printf("send the results of job %s: %v (the answer was cut short)", job, err)
	}
}

// KeptResults reads the results.json the server keeps of a job, nil when
// it has none that decodes.
func KeptResults(h *history.Store, job string) *result.Results {
	r, _ := kept(h, job, func(rd io.Reader) (*result.Results, error) {
		data, err := io.ReadAll(rd)
		if err != nil {
			return nil, err
		}
		return result.Decode(data)
	})
	return r
}

// keptHead is KeptResults without the cases (result.ReadHead): the
// run's status and criteria, for a buffer's memory rather than that of a
// run at the case cap.
func keptHead(h *history.Store, job string) *result.Results {
	r, _ := kept(h, job, result.ReadHead)
	return r
}

// keptForSite is a run's kept results.json for the site's pages, without
// its cases where they show none (site.Options.Results).
func (s *Server) keptForSite(run history.Run, cases bool) *result.Results {
	if cases {
		return KeptResults(s.h, run.JobID)
	}
	return keptHead(s.h, run.JobID)
}

func kept(h *history.Store, job string, read func(io.Reader) (*result.Results, error)) (*result.Results, error) {
	body, ok, err := h.ResultsFile(job)
	if err != nil || !ok {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	return read(zr)
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
