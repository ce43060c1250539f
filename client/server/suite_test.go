package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/internal/post"
	"github.com/xrun-dev/xrun/result"
)

// The server's suite runs on each database the history runs on: SQLite
// here (TestServerSQLite), PostgreSQL in the integration suite
// (TestServerPostgres, which starts its own server). open gives each
// subtest an empty history of its own.
func runSuite(t *testing.T, open func(t *testing.T) *history.Store) {
	t.Run("post", func(t *testing.T) { testPost(t, open(t)) })
	t.Run("duplicate", func(t *testing.T) { testDuplicate(t, open(t)) })
	t.Run("scopes", func(t *testing.T) { testScopes(t, open(t)) })
	t.Run("hostile", func(t *testing.T) { testHostile(t, open(t)) })
	t.Run("concurrent", func(t *testing.T) { testConcurrent(t, open(t)) })
	t.Run("restart", func(t *testing.T) { testRestart(t, open(t)) })
	t.Run("missing", func(t *testing.T) { testMissing(t, open(t)) })
	t.Run("kept", func(t *testing.T) { testKept(t, open(t)) })
	t.Run("regress", func(t *testing.T) { testRegress(t, open(t)) })
	t.Run("dashboard", func(t *testing.T) { testDashboard(t, open(t)) })
	t.Run("sessions", func(t *testing.T) { testSessions(t, open(t)) })
}

// The server keeps each job's results.json as it was posted, for a read
// token: a post of the job replaces it, and removing the job's run from
// the history removes it.
func testKept(t *testing.T, h *history.Store) {
	f := newFixture(t, h, Options{})
	first := results(t, "job-k", day, 2)
	second := append(results(t, "job-k", day.Add(time.Hour), 3), '\n', ' ')
	if code, r := f.postResults(t, f.post, first); code != http.StatusCreated {
		t.Fatalf("post: %d %+v", code, r)
	}
	if code, data := f.do(t, http.MethodGet, "/api/v1/runs/job-k/results", f.read, nil); code != http.StatusOK || !bytes.Equal(data, first) {
		t.Errorf("results of job-k: %d, %d bytes; want 200 and the %d bytes posted", code, len(data), len(first))
	}
	if code, r := f.postResults(t, f.post, second); code != http.StatusOK || r.Status != "replaced" {
		t.Fatalf("post again: %d %+v", code, r)
	}
	if code, data := f.do(t, http.MethodGet, "/api/v1/runs/job-k/results", f.admin, nil); code != http.StatusOK || !bytes.Equal(data, second) {
		t.Errorf("results of job-k after its second post: %d, %q; want the second post, its trailing white space too", code, data)
	}
	// A job is found by the start of its id when that names it alone.
	if code, r := f.postResults(t, f.post, results(t, "job-kx", day, 1)); code != http.StatusCreated {
		t.Fatalf("post job-kx: %d %+v", code, r)
	}
	for _, c := range []struct {
		ref  string
		want int
		job  string
	}{{"job-k", http.StatusOK, "job-k"}, {"job-kx", http.StatusOK, "job-kx"}, {"job-", http.StatusBadRequest, ""}, {"job_", http.StatusNotFound, ""}, {"job", http.StatusNotFound, ""}, {"job-kx1", http.StatusNotFound, ""}} {
		code, data := f.do(t, http.MethodGet, "/api/v1/runs/"+c.ref, f.read, nil)
		var got []history.Run
		json.Unmarshal(data, &got)
		if code != c.want || (c.job != "" && (len(got) != 1 || got[0].JobID != c.job)) {
			t.Errorf("runs of %q: %d %s; want %d (job %q)", c.ref, code, data, c.want, c.job)
		}
	}
	for _, c := range []struct {
		token, path string
		want        int
	}{
		{f.post, "/api/v1/runs/job-k/results", http.StatusForbidden},
		{"", "/api/v1/runs/job-k/results", http.StatusUnauthorized},
		{f.read, "/api/v1/runs/job-none/results", http.StatusNotFound},
	} {
		if code, data := f.do(t, http.MethodGet, c.path, c.token, nil); code != c.want || bytes.Contains(data, []byte("schema_version")) {
			t.Errorf("GET %s with token %q: %d %s; want %d", c.path, c.token, code, data, c.want)
		}
	}
	if _, err := h.Remove(runs(t, h)); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := h.ResultsFile("job-k"); ok || err != nil {
		t.Errorf("the results of a removed job are kept (%v)", err)
	}
}

// GET /api/v1/regress judges the runs with the results they posted.
func testRegress(t *testing.T, h *history.Store) {
	f := newFixture(t, h, Options{})
	for i := 0; i < 4; i++ {
		if code, r := f.postResults(t, f.post, results(t, fmt.Sprintf("job-%d", i), day.Add(time.Duration(i)*24*time.Hour), 2)); code != http.StatusCreated {
			t.Fatalf("post %d: %d %+v", i, code, r)
		}
	}
	code, data := f.do(t, http.MethodGet, "/api/v1/regress?job=job-3&window=3&min_history=2", f.read, nil)
	var rep struct {
		Rule struct {
			Window int `json:"window"`
		} `json:"rule"`
		Runs []struct {
			JobID   string          `json:"job_id"`
			Total   int             `json:"total"`
			Counts  map[string]int  `json:"counts"`
			Outcome json.RawMessage `json:"outcome"`
		} `json:"runs"`
	}
	if code != http.StatusOK || json.Unmarshal(data, &rep) != nil || rep.Rule.Window != 3 || len(rep.Runs) != 1 ||
		rep.Runs[0].JobID != "job-3" || rep.Runs[0].Total != 4 || rep.Runs[0].Counts["stable"] != 4 || len(rep.Runs[0].Outcome) == 0 {
		t.Errorf("regress of job-3: %d %s; want 4 stable timings of job-3, with its outcome", code, data)
	}
	for _, c := range []struct {
		query string
		want  int
	}{
		{"job=job-none", http.StatusNotFound},
		{"window=x", http.StatusBadRequest},
		{"window=2&min_history=3", http.StatusBadRequest},
	} {
		if code, data := f.do(t, http.MethodGet, "/api/v1/regress?"+c.query, f.read, nil); code != c.want {
			t.Errorf("regress?%s: %d %s; want %d", c.query, code, data, c.want)
		}
	}
	if code, _ := f.do(t, http.MethodGet, "/api/v1/regress", f.post, nil); code != http.StatusForbidden {
		t.Errorf("regress with a post token: %d, want 403", code)
	}
}

// A post token learns which of the jobs it names the server lacks, and
// nothing else; a question too large or not JSON is refused.
func testMissing(t *testing.T, h *history.Store) {
	f := newFixture(t, h, Options{})
	if code, r := f.postResults(t, f.post, results(t, "job-a", time.Now(), 1)); code != http.StatusCreated {
		t.Fatalf("post job-a: %d %+v", code, r)
	}
	ask := func(token string, body []byte) (int, Missing) {
		code, data := f.do(t, http.MethodPost, MissingPath, token, body)
		var m Missing
		if code == http.StatusOK {
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatalf("answer %q: %v", data, err)
			}
		}
		return code, m
	}
	q, _ := json.Marshal(Missing{JobIDs: []string{"job-a", "job-b", "job-c"}})
	for _, tok := range []string{f.post, f.admin} {
		if code, m := ask(tok, q); code != http.StatusOK || strings.Join(m.Missing, ",") != "job-b,job-c" {
			t.Errorf("missing of job-a, job-b, job-c: %d %+v, want job-b and job-c", code, m)
		}
	}
	if code, _ := ask(f.read, q); code != http.StatusForbidden {
		t.Errorf("a read token asked: %d, want 403", code)
	}
	if code, m := ask(f.post, []byte(`{"job_ids": []}`)); code != http.StatusOK || m.Missing == nil || len(m.Missing) != 0 {
		t.Errorf("no ids: %d %+v, want an empty list", code, m)
	}
	big, _ := json.Marshal(Missing{JobIDs: make([]string, MaxMissing+1)})
	if code, _ := ask(f.post, big); code != http.StatusBadRequest {
		t.Errorf("%d ids: %d, want 400", MaxMissing+1, code)
	}
	if code, _ := ask(f.post, []byte(`{"job_ids": [1`)); code != http.StatusBadRequest {
		t.Errorf("bad JSON: %d, want 400", code)
	}
}

// fixture is a server of h, with a token of each scope.
type fixture struct {
	h                 *history.Store
	srv               *httptest.Server
	post, read, admin string
	logMu             sync.Mutex
	log               bytes.Buffer
}

func (f *fixture) Write(p []byte) (int, error) {
	f.logMu.Lock()
	defer f.logMu.Unlock()
	return f.log.Write(p)
}

func (f *fixture) logText() string {
	f.logMu.Lock()
	defer f.logMu.Unlock()
	return f.log.String()
}

func newFixture(t *testing.T, h *history.Store, o Options) *fixture {
	t.Helper()
	f := &fixture{h: h}
	o.Log = log.New(f, "", 0)
	s := New(h, o)
	f.srv = httptest.NewServer(s)
	t.Cleanup(func() { f.srv.Close(); s.Close() })
	for _, sc := range Scopes {
		secret, err := NewToken(h, "t-"+sc, sc)
		if err != nil {
			t.Fatal(err)
		}
		switch sc {
		case ScopePost:
			f.post = secret
		case ScopeRead:
			f.read = secret
		case ScopeAdmin:
			f.admin = secret
		}
	}
	return f
}

// do sends a request with token (none when empty) and returns the status
// and the body.
func (f *fixture) do(t *testing.T, method, path, token string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

func (f *fixture) postResults(t *testing.T, token string, body []byte) (int, reply) {
	t.Helper()
	code, data := f.do(t, http.MethodPost, ResultsPath, token, body)
	var r reply
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("post answered %d with %q, not JSON: %v", code, data, err)
	}
	if r.Message == "" || !strings.HasSuffix(r.Message, ".") || strings.Count(r.Message, ". ") > 0 {
		t.Errorf("post answered %d with message %q, not one sentence", code, r.Message)
	}
	return code, r
}

// runs is every run of the history.
func runs(t *testing.T, h *history.Store) []history.Run {
	t.Helper()
	rs, err := h.Runs("")
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// results is a job's results.json: cases x 2 implementations.
func results(t testing.TB, id string, at time.Time, cases int) []byte {
	r := &result.Results{SchemaVersion: result.SchemaVersion, JobID: id, Experiment: "synthetic", CreatedAt: at,
		Status: result.StatusSucceeded, Mode: "gpu", Baseline: "i0", Implementations: []string{"i0", "i1"},
		Env: result.Env{Host: "gpu-box", Driver: "580.159.04", CUDARuntime: "13.0", Torch: "2.11.0", Python: "3.12.3",
			GPUs: []result.GPU{{Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-52449011",
				Before: &result.GPUState{MaxSMClockMHz: 1980, PowerLimitW: 700}}}}}
	for c := 0; c < cases; c++ {
		cs := result.Case{Params: map[string]any{"T": 256 << c}, Label: fmt.Sprintf("T=%d", 256<<c),
			Results: map[string]*result.ImplResult{}}
		for _, name := range r.Implementations {
			cs.Results[name] = &result.ImplResult{Status: result.ImplOK, Timing: &result.Timing{
				MedianMS: 1, Q1MS: 0.99, Q3MS: 1.01, Samples: 100, Converged: true, Clock: result.ClockKernel,
				KeptSamplesMS: []float64{0.99, 1, 1.01}}}
		}
		r.Cases = append(r.Cases, cs)
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

var day = time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC)

func testPost(t *testing.T, h *history.Store) {
	f := newFixture(t, h, Options{})
	code, r := f.postResults(t, f.post, results(t, "job-1", day, 3))
	if code != http.StatusCreated || r.Status != "stored" || r.Imported == nil || r.Points != 6 || r.JobID != "job-1" {
		t.Fatalf("post answered %d %+v; want 201, stored, 6 points of job-1", code, r)
	}
	rs := runs(t, h)
	if len(rs) != 1 || rs[0].JobID != "job-1" || rs[0].Source != "post:t-post" {
		t.Fatalf("history has runs %+v; want job-1 from post:t-post", rs)
	}
	code, data := f.do(t, http.MethodGet, "/api/v1/runs/job-1", f.read, nil)
	var got []history.Run
	if err := json.Unmarshal(data, &got); code != http.StatusOK || err != nil || len(got) != 1 || got[0].Experiment != "synthetic" {
		t.Fatalf("GET the job answered %d %s", code, data)
	}
	// A second night: the history of its series, judged, as xrun
	// history --json prints it.
	if code, r := f.postResults(t, f.post, results(t, "job-2", day.Add(24*time.Hour), 3)); code != http.StatusCreated {
		t.Fatalf("second post answered %d %+v", code, r)
	}
	code, data = f.do(t, http.MethodGet, "/api/v1/history?experiment=synthetic&impl=i1&case=T=512", f.read, nil)
	var series []struct {
		Points []struct {
			JobID string `json:"job_id"`
		} `json:"points"`
	}
	if err := json.Unmarshal(data, &series); code != http.StatusOK || err != nil || len(series) != 1 || len(series[0].Points) != 2 ||
		series[0].Points[1].JobID != "job-2" {
		t.Fatalf("GET history answered %d %s; want one series of job-1 and job-2", code, data)
	}
	code, data = f.do(t, http.MethodGet, "/api/v1/history?experiment=nothing", f.read, nil)
	if code != http.StatusNotFound || !strings.Contains(string(data), "no run that matches") {
		t.Fatalf("GET history of no run answered %d %s; want 404", code, data)
	}
	code, data = f.do(t, http.MethodGet, "/api/v1/runs/job-9", f.read, nil)
	if code != http.StatusNotFound {
		t.Fatalf("GET an unknown job answered %d %s; want 404", code, data)
	}
	// What the runner posts with (internal/post, XRUN_POST_URL and
	// XRUN_POST_TOKEN): stored; a wrong token is refused at once, not
	// retried, and its error does not hold the token.
	ctx := context.Background()
	if err := post.Post(ctx, f.srv.URL+ResultsPath, f.post, results(t, "job-3", day.Add(48*time.Hour), 1), post.Options{}); err != nil {
		t.Fatalf("the runner's post: %v", err)
	}
	if rs := runs(t, h); len(rs) != 3 {
		t.Fatalf("history has %d runs after the runner's post; want 3", len(rs))
	}
	wrong := "xrun_notatoken"
	err := post.Post(ctx, f.srv.URL+ResultsPath, wrong, results(t, "job-4", day, 1), post.Options{Attempts: 3})
	var se *post.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusUnauthorized || strings.Contains(err.Error(), wrong) ||
		strings.Contains(err.Error(), "gave up") {
		t.Fatalf("the runner's post with a wrong token: %v; want a 401 at once, without the token", err)
	}
}

func testDuplicate(t *testing.T, h *history.Store) {
	f := newFixture(t, h, Options{})
	body := results(t, "job-1", day, 2)
	if code, r := f.postResults(t, f.post, body); code != http.StatusCreated {
		t.Fatalf("first post answered %d %+v", code, r)
	}
	code, r := f.postResults(t, f.post, body)
	if code != http.StatusOK || r.Status != "replaced" || !r.Replaced {
		t.Fatalf("duplicate post answered %d %+v; want 200 replaced", code, r)
	}
	// The job posted again with another start (a runner's results
	// rewritten): still one run of the job, the latest post's.
	if code, r := f.postResults(t, f.post, results(t, "job-1", day.Add(time.Hour), 4)); code != http.StatusOK || !r.Replaced {
		t.Fatalf("post of another start answered %d %+v; want 200 replaced", code, r)
	}
	rs := runs(t, h)
	if len(rs) != 1 || !rs[0].At.Equal(day.Add(time.Hour)) {
		t.Fatalf("history has runs %+v; want one, of the last post", rs)
	}
	n, err := h.CountPoints(rs)
	if err != nil || n[rs[0].ID] != 8 {
		t.Fatalf("the run has %v points (%v); want 8", n, err)
	}
}

func testScopes(t *testing.T, h *history.Store) {
	f := newFixture(t, h, Options{})
	body := results(t, "job-1", day, 1)
	// post cannot read.
	if code, data := f.do(t, http.MethodGet, "/api/v1/runs", f.post, nil); code != http.StatusForbidden {
		t.Errorf("GET with a post token answered %d %s; want 403", code, data)
	}
	// read cannot post, and nothing is stored.
	if code, r := f.postResults(t, f.read, body); code != http.StatusForbidden || r.Status != "forbidden" {
		t.Errorf("post with a read token answered %d %+v; want 403", code, r)
	}
	if rs := runs(t, h); len(rs) != 0 {
		t.Fatalf("a refused post stored %+v", rs)
	}
	// A wrong token and none: 401, and the wrong one is not echoed.
	wrong := "xrun_" + strings.Repeat("Zq9", 14)
	for _, tok := range []string{wrong, ""} {
		code, r := f.postResults(t, tok, body)
		if code != http.StatusUnauthorized || r.Status != "unauthorized" {
			t.Errorf("post with token %q answered %d %+v; want 401", tok, code, r)
		}
		code, data := f.do(t, http.MethodGet, "/api/v1/runs", tok, nil)
		if code != http.StatusUnauthorized || strings.Contains(string(data), wrong) {
			t.Errorf("GET with token %q answered %d %s; want 401 without the token", tok, code, data)
		}
	}
	// A token in the URL is not one.
	if code, _ := f.do(t, http.MethodGet, "/api/v1/runs?token="+f.read, "", nil); code != http.StatusUnauthorized {
		t.Errorf("a token in the query was taken (%d)", code)
	}
	if rs := runs(t, h); len(rs) != 0 {
		t.Fatalf("a refused post stored %+v", rs)
	}
	// admin may do both.
	if code, r := f.postResults(t, f.admin, body); code != http.StatusCreated {
		t.Errorf("post with an admin token answered %d %+v", code, r)
	}
	if code, data := f.do(t, http.MethodGet, "/api/v1/runs", f.admin, nil); code != http.StatusOK || !strings.Contains(string(data), "job-1") {
		t.Errorf("GET with an admin token answered %d %s", code, data)
	}
	// A removed token is refused.
	if ok, err := h.RemoveToken("t-read"); !ok || err != nil {
		t.Fatalf("remove token: %v %v", ok, err)
	}
	if code, _ := f.do(t, http.MethodGet, "/api/v1/runs", f.read, nil); code != http.StatusUnauthorized {
		t.Errorf("a removed token answered %d; want 401", code)
	}
	logText := f.logText()
	for _, secret := range []string{f.post, f.read, f.admin, wrong} {
		if strings.Contains(logText, secret) {
			t.Errorf("the log holds a token:\n%s", logText)
		}
	}
	if !strings.Contains(logText, "POST "+ResultsPath+" 403 token=t-read") {
		t.Errorf("the log does not name the refused post's token:\n%s", logText)
	}
	// The history keeps hashes, never a token itself.
	if _, ok, _ := h.TokenByHash(f.post); ok {
		t.Error("a token's secret was found as its own hash")
	}
}

func testHostile(t *testing.T, h *history.Store) {
	f := newFixture(t, h, Options{MaxBody: 64 << 10})
	good := string(results(t, "job-h", day, 1))
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000) // within the cap
	cases := []struct {
		name string
		body string
		code int
		want string
	}{
		{"too large", strings.Replace(good, `"job_id"`, `"pad":"`+strings.Repeat("x", 100<<10)+`","job_id"`, 1),
			http.StatusRequestEntityTooLarge, "larger than"},
		{"NaN", strings.Replace(good, `"median_ms":1`, `"median_ms":NaN`, 1), http.StatusBadRequest, "refused"},
		{"Inf", strings.Replace(good, `"median_ms":1`, `"median_ms":1e999`, 1), http.StatusBadRequest, "refused"},
		{"beyond the bounds", strings.Replace(good, `"median_ms":1`, `"median_ms":1e300`, 1), http.StatusBadRequest, "median"},
		{"schema", strings.Replace(good, `"schema_version":1`, `"schema_version":99`, 1), http.StatusBadRequest, "schema_version"},
		{"wrong type", strings.Replace(good, `"experiment":"synthetic"`, `"experiment":{"a":1}`, 1), http.StatusBadRequest, "refused"},
		{"deeply nested case", strings.Replace(good, `"cases":[`, `"cases":[`+deep+`,`, 1), http.StatusBadRequest, "refused"},
		{"deeply nested field", strings.Replace(good, `"experiment":"synthetic"`, `"experiment":`+deep, 1), http.StatusBadRequest, "refused"},
		{"not JSON", "results, honestly", http.StatusBadRequest, "refused"},
		{"cut short", good[:len(good)/2], http.StatusBadRequest, "refused"},
		{"running", strings.Replace(good, `"status":"succeeded"`, `"status":"running"`, 1), http.StatusUnprocessableEntity, "still running"},
		{"no job id", strings.Replace(good, `"job_id":"job-h"`, `"job_id":""`, 1), http.StatusUnprocessableEntity, "no job_id"},
	}
	for _, c := range cases {
		if c.body == good {
			t.Fatalf("%s: the fixture did not change (the results' JSON changed?)", c.name)
		}
		code, r := f.postResults(t, f.post, []byte(c.body))
		if code != c.code || r.Status != "refused" || !strings.Contains(r.Message, c.want) {
			t.Errorf("%s: post answered %d %+v; want %d refused, saying %q", c.name, code, r, c.code, c.want)
		}
	}
	if rs := runs(t, h); len(rs) != 0 {
		t.Fatalf("refused posts stored %+v", rs)
	}
	// A NUL in a text the bounds do not cover (the host's name): SQLite
	// holds it, PostgreSQL's text cannot; refused there as the input's
	// fault (400, not retried), never a 5xx the runner would retry.
	nul := strings.Replace(good, `"host":"gpu-box"`, `"host":"gpu\u0000box"`, 1)
	if nul == good {
		t.Fatal("the fixture has no host gpu-box")
	}
	code, r := f.postResults(t, f.post, []byte(nul))
	switch {
	case h.Postgres() && (code != http.StatusBadRequest || r.Status != "refused" || !strings.Contains(r.Message, "0x00")):
		t.Errorf("a NUL on PostgreSQL: post answered %d %+v; want 400 refused", code, r)
	case !h.Postgres() && code != http.StatusCreated:
		t.Errorf("a NUL on SQLite: post answered %d %+v; want 201", code, r)
	}
	if rs := runs(t, h); h.Postgres() && len(rs) != 0 {
		t.Fatalf("a refused post stored %+v", rs)
	}
	// The same server stores the good one (on SQLite, in place of the
	// NUL's run of the same job).
	want := http.StatusCreated
	if !h.Postgres() {
		want = http.StatusOK
	}
	if code, r := f.postResults(t, f.post, []byte(good)); code != want {
		t.Fatalf("the good post answered %d %+v; want %d", code, r, want)
	}
}

func testConcurrent(t *testing.T, h *history.Store) {
	f := newFixture(t, h, Options{})
	const jobs = 100
	// Each job posted twice at once (a runner's retry racing its first
	// try): 200 posts in flight, every job stored once.
	var wg sync.WaitGroup
	codes := make(chan int, 2*jobs)
	for i := 0; i < 2*jobs; i++ {
		body := results(t, fmt.Sprintf("job-%03d", i%jobs), day.Add(time.Duration(i%jobs)*time.Minute), 2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, f.srv.URL+ResultsPath, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+f.post)
			resp, err := f.srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	created, replaced := 0, 0
	for c := range codes {
		switch c {
		case http.StatusCreated:
			created++
		case http.StatusOK:
			replaced++
		default:
			t.Errorf("a post answered %d", c)
		}
	}
	if created != jobs || replaced != jobs {
		t.Errorf("%d posts stored and %d replaced; want %d each", created, replaced, jobs)
	}
	rs := runs(t, h)
	seen := map[string]int{}
	for _, r := range rs {
		seen[r.JobID]++
	}
	if len(rs) != jobs || len(seen) != jobs {
		t.Fatalf("history has %d runs of %d jobs; want %d of %d", len(rs), len(seen), jobs, jobs)
	}
	n, err := h.CountPoints(rs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if n[r.ID] != 4 {
			t.Fatalf("run of %s has %d points; want 4", r.JobID, n[r.ID])
		}
	}
}

// A runner posting while the server restarts: its post is refused (no
// one listens), retried with backoff, and stored once the server is back.
func testRestart(t *testing.T, h *history.Store) {
	token, err := NewToken(h, "runners", ScopePost)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	url := "http://" + addr + ResultsPath
	serve := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		up, done := make(chan struct{}), make(chan error, 1)
		go func() { done <- Run(ctx, New(h, Options{}), addr, 5*time.Second, func(string) { close(up) }) }()
		select {
		case <-up:
		case err := <-done:
			t.Fatalf("serve on %s: %v", addr, err)
		}
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("stop: %v", err)
			}
		}
	}
	stop := serve()
	ctx := context.Background()
	if err := post.Post(ctx, url, token, results(t, "job-a", day, 1), post.Options{Attempts: 1}); err != nil {
		t.Fatalf("post before the restart: %v", err)
	}
	stop()
	posted := make(chan error, 1)
	go func() {
		posted <- post.Post(ctx, url, token, results(t, "job-b", day.Add(time.Hour), 1),
			post.Options{Attempts: 10, Base: 100 * time.Millisecond, Max: 400 * time.Millisecond})
	}()
	time.Sleep(500 * time.Millisecond) // the post's first tries find no server
	stop = serve()
	defer stop()
	if err := <-posted; err != nil {
		t.Fatalf("post across the restart: %v", err)
	}
	rs := runs(t, h)
	if len(rs) != 2 || rs[0].JobID != "job-a" || rs[1].JobID != "job-b" {
		t.Fatalf("history has %+v; want job-a and job-b", rs)
	}
}
