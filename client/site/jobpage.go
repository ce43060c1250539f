package site

// A job's page: its verdicts that night, its criteria, its table and
// figures, and where it ran.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/plot"
	"github.com/xrun-dev/xrun/internal/text"
	"github.com/xrun-dev/xrun/report"
	"github.com/xrun-dev/xrun/result"
)

// provenance is a row of a job's "where it ran" table.
type provenance struct{ Name, Value string }

type criterionView struct {
	Name, Kind, Value, Threshold, Outcome, Class, Expect, Detail string
}

type figureView struct{ Title, PNG, SVG string }

// jobPageFor writes the page of run r with its points as that night
// judged them (omitted more, of series without a page, in the table of
// all series at allPage).
// It returns the run's outcome against the declared one, and its class
// ("" without a results.json at hand), for the index.
func (b *builder) jobPageFor(r history.Run, points []pointView, omitted int, allPage string) (string, string, error) {
	name := b.jobPage(r.JobID)
	timings := len(points) + omitted
	// A table of 50000 rows is megabytes, and a sweep figure of 5000
	// cases minutes of drawing that no one can read: a larger run's page
	// shows its head alone.
	large := timings > JobDetail
	res := b.results(r, !large)
	data := map[string]any{"Root": "../", "Title": r.Experiment + " · job " + r.JobID, "Run": r, "Rule": ruleText(b.o.Rule)}
	data["Points"], data["Omitted"], data["AllPage"] = points, omitted, allPage
	var outcome, class string
	if res != nil {
		data["Results"] = res
		data["Provenance"] = provenanceOf(r, res)
		outcome, class = outcomeText(res)
		data["Outcome"], data["OutcomeClass"] = outcome, class
		if large {
			data["Large"] = timings
		} else {
			var table bytes.Buffer
			if err := report.TextWith(&table, res, report.TextOptions{}); err != nil {
				return "", "", err
			}
			data["Table"] = table.String()
		}
		data["Criteria"] = criteriaOf(res)
		data["Error"] = text.Safe(res.Error)
		var warns []string
		for _, w := range res.Warnings {
			warns = append(warns, text.Safe(w.Message))
		}
		data["Warnings"] = warns
		if data["Large"] == nil {
			figs, ferr := b.figures(res, strings.TrimSuffix(name, ".html"))
			data["Figures"], data["FigureError"] = figs, ferr
		}
	} else {
		data["Provenance"] = provenanceOf(r, nil)
	}
	if err := b.render("jobs/"+name, "job.html", data); err != nil {
		return "", "", err
	}
	b.pages = append(b.pages, Page{Path: "jobs/" + name, Kind: "job", Title: r.Experiment + " · job " + r.JobID})
	return outcome, class, nil
}

// JobDetail is how many timings a run may have for its page to hold its
// results table and sweep and roofline figures; a larger run's page says
// that xrun results gives them.
const JobDetail = 5000

// figures draws a job's sweep and roofline into jobs/<base>/, and says
// why where it cannot.
func (b *builder) figures(res *result.Results, base string) ([]figureView, string) {
	dir := filepath.Join(b.o.Dir, "jobs", base)
	figs, err := plot.Sweep(res, dir)
	var why []string
	if err != nil {
		why = append(why, err.Error())
	}
	if roof, err := plot.Roofline(res, dir); err == nil {
		figs = append(figs, roof)
	} else if !errors.Is(err, plot.ErrNoRoofline) {
		why = append(why, err.Error())
	}
	var out []figureView
	for _, f := range figs {
		title, _, _ := strings.Cut(f.Title, "\n")
		out = append(out, figureView{Title: title, PNG: base + "/" + filepath.Base(f.PNG), SVG: base + "/" + filepath.Base(f.SVG)})
	}
	return out, text.Safe(strings.Join(why, "; "))
}

func provenanceOf(r history.Run, res *result.Results) []provenance {
	var out []provenance
	add := func(name, value string) {
		if value != "" {
			out = append(out, provenance{name, text.Safe(value)})
		}
	}
	add("job", r.JobID)
	add("started", r.At.UTC().Format(time.RFC3339))
	add("status", r.Status)
	// The site is published (the nightly's GitHub Pages): where a Docker
	// host is reached (tcp://10.0.0.5:2376, ssh://lab@gpu1) and the
	// importer's paths stay out of it.
	add("host", publicHost(r.Host, r.Address))
	// A run of a job (its store's, or posted by its runner) came with
	// the job; a file imported is named.
	if r.Source != history.SourceStore && !strings.HasPrefix(r.Source, history.SourcePost) {
		add("imported from", filepath.Base(r.Source))
	}
	if res == nil {
		add("GPU", r.GPU)
		add("GPU UUID", r.GPUUUID)
		return out
	}
	e := res.Env
	if res.FinishedAt != nil {
		add("finished", res.FinishedAt.UTC().Format(time.RFC3339))
	}
	add("mode", res.Mode)
	for _, g := range e.GPUs {
		v := g.Name
		if g.UUID != "" {
			v += " (" + g.UUID + ")"
		}
		if g.Before != nil && g.Before.MaxSMClockMHz > 0 {
			v += fmt.Sprintf(", max SM clock %d MHz", g.Before.MaxSMClockMHz)
		}
		if g.Before != nil && g.Before.PowerLimitW > 0 {
			v += fmt.Sprintf(", power limit %.0f W", g.Before.PowerLimitW)
		}
		add(fmt.Sprintf("GPU %d", g.Index), v)
	}
	add("CPU", e.CPU)
	add("driver", e.Driver)
	add("CUDA runtime", e.CUDARuntime)
	add("Python", e.Python)
	add("PyTorch", e.Torch)
	add("Triton", e.Triton)
	add("NumPy", e.Numpy)
	if e.OS != "" || e.Arch != "" {
		add("OS", strings.TrimSpace(e.OS+" "+e.Arch))
	}
	commit := e.GitCommit
	if commit != "" && e.GitDirty {
		commit += " (the experiment's files differed from it)"
	}
	add("git commit", commit)
	add("image", res.Image.Ref)
	add("image digest", res.Image.Digest)
	add("code hash", res.Image.CodeHash)
	add("spec hash", res.SpecHash)
	add("xrun client", res.ClientVersion)
	add("xrun runner", res.RunnerVersion)
	return out
}

func criteriaOf(res *result.Results) []criterionView {
	var out []criterionView
	for _, c := range res.Criteria {
		v := criterionView{Name: text.Safe(c.Name), Kind: c.Kind, Value: fmt.Sprintf("%.4g", c.Value),
			Threshold: fmt.Sprintf("%.4g", c.Threshold), Expect: c.Expect, Detail: text.Safe(c.Detail)}
		switch {
		case c.NotEvaluated:
			v.Outcome, v.Class = "not evaluated", "noisy"
		case c.Skipped:
			v.Outcome, v.Class = "skipped", "insufficient"
		case c.Passed:
			v.Outcome, v.Class = "passed", "stable"
		default:
			v.Outcome, v.Class = "failed", "regressed"
		}
		if c.Expect == result.ExpectFail && !c.Passed && !c.Skipped && !c.NotEvaluated {
			v.Outcome, v.Class = "failed, as declared", "insufficient"
		}
		out = append(out, v)
	}
	return out
}

// outcomeText says how a run came out against its declared outcome, and
// the class that colours it.
func outcomeText(res *result.Results) (string, string) {
	o := analyze.ExpectedOutcome(res)
	switch {
	case o.Expected:
		return res.Status + ", as the experiment declares", "stable"
	case len(o.Worse) > 0:
		return res.Status + ", worse than declared: " + text.Safe(strings.Join(o.Worse, "; ")), "regressed"
	}
	return res.Status + ", changed from the declared one: " + text.Safe(strings.Join(o.Better, "; ")), "suspect"
}

// results returns r's results.json (its head alone will do without
// cases), nil when not at hand.
func (b *builder) results(r history.Run, cases bool) *result.Results {
	if b.o.Results == nil {
		return nil
	}
	if h, ok := b.heads[r.ID]; ok && !cases {
		<-h.done
		return h.res
	}
	return b.o.Results(r, cases)
}

// publicHost names a run's machine on a published page: its name, or,
// for a run that recorded none, a short hash of where it was reached with
// the way it was (ssh, tcp, ...), which tells hosts apart without
// publishing their addresses or users.
func publicHost(host, address string) string {
	if host != "" || address == "" {
		return host
	}
	scheme, _, ok := strings.Cut(address, "://")
	if !ok {
		scheme = "host"
	}
	sum := sha256.Sum256([]byte(address))
	return fmt.Sprintf("%s host %s", scheme, hex.EncodeToString(sum[:3]))
}
