package server

// The readers' endpoints: the history, regress's report, the site's
// pages and each run's posted results.json.

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/nightly"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/client/site"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

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
