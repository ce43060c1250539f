// Package site writes the results history as a static web site, the
// dashboard a team publishes (xrun report --html): an index of the
// experiments with the regression rule's verdicts on each one's latest
// runs, a page per series with its trend figure and each night's verdict as
// that night reported it, and a page per job with its table, criteria,
// figures and provenance. The pages are plain HTML and CSS made with
// html/template (every text of the experiment's is escaped), link each
// other by relative paths, load nothing from elsewhere, and are the same
// bytes for the same history.
package site

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/nightly"
	"github.com/xrun-dev/xrun/client/plot"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/internal/table"
	"github.com/xrun-dev/xrun/internal/text"
	"github.com/xrun-dev/xrun/result"
)

//go:embed templates/*.html templates/style.css
var files embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"status": statusClass,
	"date":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
	"ms": func(v float64) string {
		if v <= 0 {
			return "-"
		}
		return table.FixedMS(v)
	},
}).ParseFS(files, "templates/*.html"))

// Options say what Build writes.
type Options struct {
	// Dir is the site's directory (made as needed).
	Dir string
	// Rule is the regression rule the verdicts are the rule's of.
	Rule regress.Rule
	// Experiments limits the site to these experiments (none: all).
	Experiments []string
	// Results returns a run's results.json (nil when it is not at hand:
	// the job's page then has the history's figures alone); without
	// cases, its head will do (result.ReadHead): the page of a run of
	// more than JobDetail timings, and the index, show none of its cases.
	// It is called from more than one goroutine at once.
	Results func(run history.Run, cases bool) *result.Results
	// Progress receives a line per experiment and per step of long work
	// (nil: none).
	Progress io.Writer
	// Context stops the build between groups of series and between pages
	// (Ctrl-C): the directory is then as it was (nil: never).
	Context context.Context
	// SeriesPagesAll and SeriesPages replace the constants of those names
	// (0: the constants): every series of an experiment of no more than
	// SeriesPagesAll gets a page, else the SeriesPages worst.
	SeriesPagesAll, SeriesPages int
}

// Page is one page written.
type Page struct {
	// Path is the page's path in the site (slashes).
	Path string `json:"path"`
	// Kind is "index", "series" or "job".
	Kind  string `json:"kind"`
	Title string `json:"title"`
}

// ErrEmpty is returned for a history with no run (of the experiments
// asked for).
var ErrEmpty = errors.New("the results history has no run to report")

// Build writes the site into o.Dir and returns its pages, index first,
// then by path.
func Build(h *history.Store, o Options) ([]Page, error) {
	b := &builder{h: h, o: o, jobFiles: map[string]string{}}
	if b.o.Progress == nil {
		b.o.Progress = io.Discard
	}
	if b.o.Context == nil {
		b.o.Context = context.Background()
	}
	if err := b.build(); err != nil {
		return nil, err
	}
	sort.Slice(b.pages[1:], func(i, j int) bool { return b.pages[1+i].Path < b.pages[1+j].Path })
	return b.pages, nil
}

type builder struct {
	h        *history.Store
	o        Options
	pages    []Page
	jobFiles map[string]string // job id -> page's base name
	usedJobs map[string]bool
	// heads are the heads of the experiment's large runs (more than
	// JobDetail timings: their pages show no cases), read beside its walk.
	heads map[int64]*headRead
}

// headRead is a run's head, read on a goroutine of its own: res once done
// is closed.
type headRead struct {
	done chan struct{}
	res  *result.Results
}

// readHeads starts reading the heads of the large runs of an experiment
// (counts: points by run) on a goroutine of their own, one after another.
func (b *builder) readHeads(ctx context.Context, runs []history.Run, counts map[int64]int) {
	b.heads = map[int64]*headRead{}
	if b.o.Results == nil {
		return
	}
	var large []history.Run
	for _, r := range runs {
		if counts[r.ID] > JobDetail {
			b.heads[r.ID] = &headRead{done: make(chan struct{})}
			large = append(large, r)
		}
	}
	go func() {
		for _, r := range large {
			h := b.heads[r.ID]
			if ctx.Err() == nil {
				h.res = b.o.Results(r, false)
			}
			close(h.done)
		}
	}()
}

// experimentView is an experiment on the index.
type experimentView struct {
	Name   string
	Latest []latestView
	// Series are the experiment's series, each with its page; or, for an
	// experiment of more series than get a page, none: AllPage is its
	// table of all series, Total of them, Paged with a page.
	Series       []seriesLink
	AllPage      string
	Total, Paged int
}

type latestView struct {
	JobID, JobPage   string
	At               time.Time
	GPU, Host        string
	Counts           []countView
	Total            int
	Outcome          string
	OutcomeClass     string
	HostNote, Advice string
	Points           []pointView
	// Omitted is how many of its timings Points leaves out (of series
	// without a page of their own).
	Omitted int
}

type countView struct {
	Status string
	N      int
}

type pointView struct {
	Case, Implementation string
	SeriesPage           string
	MedianMS             float64
	Status               string // the status word, for the class
	Text                 string // the status as the report words it
	JudgedOn             string
	Change               string
}

type seriesLink struct {
	Page, Implementation, Case, Machine, Status string
}

func (b *builder) build() error {
	runs, err := b.h.Runs("")
	if err != nil {
		return err
	}
	var exps []string
	byExp := map[string][]history.Run{}
	for _, r := range runs {
		if len(b.o.Experiments) > 0 && !contains(b.o.Experiments, r.Experiment) {
			continue
		}
		if _, ok := byExp[r.Experiment]; !ok {
			exps = append(exps, r.Experiment)
		}
		byExp[r.Experiment] = append(byExp[r.Experiment], r)
	}
	if len(exps) == 0 {
		return ErrEmpty
	}
	sort.Strings(exps)
	// Refused before any work: a directory that holds something else.
	if err := refuseOthers(b.o.Dir); err != nil {
		return err
	}
	dest := b.o.Dir
	staging, err := stage(dest)
	if err != nil {
		return err
	}
	defer os.RemoveAll(staging) // gone by the swap where all went well
	b.o.Dir = staging
	defer func() { b.o.Dir = dest }()
	if err := os.MkdirAll(filepath.Join(b.o.Dir, "series"), 0o755); err != nil {
		return fmt.Errorf("write the site: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(b.o.Dir, "jobs"), 0o755); err != nil {
		return fmt.Errorf("write the site: %w", err)
	}
	b.usedJobs = map[string]bool{}
	for _, r := range runs {
		if _, ok := byExp[r.Experiment]; ok {
			b.jobPage(r.JobID)
		}
	}
	b.pages = append(b.pages, Page{Path: "index.html", Kind: "index", Title: "xrun results"})
	var views []experimentView
	for i, exp := range exps {
		if err := b.o.Context.Err(); err != nil {
			return fmt.Errorf("write the site: %w", err)
		}
		fmt.Fprintf(b.o.Progress, "report: experiment %d/%d %s: %d run(s)\n", i+1, len(exps), text.Safe(exp), len(byExp[exp]))
		v, err := b.experiment(exp, byExp[exp])
		if err != nil {
			return err
		}
		views = append(views, v)
	}
	css, err := files.ReadFile("templates/style.css")
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(b.o.Dir, "style.css"), css); err != nil {
		return err
	}
	if err := b.render("index.html", "index.html", map[string]any{
		"Root": "", "Title": "xrun results", "Experiments": views, "Rule": ruleText(b.o.Rule),
		"Runs": len(runs), "Latest": latestAt(runs),
	}); err != nil {
		return err
	}
	if err := b.o.Context.Err(); err != nil {
		return fmt.Errorf("write the site: %w", err)
	}
	return swap(staging, dest)
}

// SeriesPagesAll and SeriesPages say which series of an experiment get a
// page of their own with a trend figure (a figure takes 50 ms to seconds
// of CPU): every series of an experiment with no more than SeriesPagesAll;
// of a larger one, those whose latest verdict a reader is sent to
// (regressed, errored, suspect, improved, worst first, up to
// SeriesPages). The rest are rows of the experiment's table of all
// series, and the index and job pages link only to pages that exist.
const (
	SeriesPagesAll = 400
	SeriesPages    = 100
)

// experiment writes the pages of one experiment's series and jobs and
// returns its part of the index. It judges the experiment a group of
// series at a time and keeps a few fields of each point, not the points.
func (b *builder) experiment(exp string, runs []history.Run) (experimentView, error) {
	v := experimentView{Name: exp}
	ctx := b.o.Context
	reported, err := b.h.ReportedForExperiment(exp)
	if err != nil {
		return v, err
	}
	changes, err := b.h.ChangePoints()
	if err != nil {
		return v, err
	}
	all, limit := b.o.SeriesPagesAll, b.o.SeriesPages
	if all <= 0 {
		all = SeriesPagesAll
	}
	if limit <= 0 {
		limit = SeriesPages
	}
	large := false // more series than all: pages for the worst alone
	latest := latestRuns(runs)
	summaries := map[int64]*nightly.RunBuilder{}
	latestPoints := map[int64][]seriesPoint{}
	for _, r := range latest {
		summaries[r.ID] = nightly.StartRun(r)
	}
	// Room for each run's points, made once: appending 50000 points a run
	// copied them over and over. A large run's head is read meanwhile.
	counts, err := b.h.PointCounts(ctx, exp)
	if err != nil {
		return v, err
	}
	b.readHeads(ctx, runs, counts)
	jobPoints := map[int64][]seriesPoint{} // by run
	for _, r := range runs {
		jobPoints[r.ID] = make([]seriesPoint, 0, counts[r.ID])
	}
	for _, r := range latest {
		latestPoints[r.ID] = make([]seriesPoint, 0, counts[r.ID])
	}
	most := 0 // a run's points, one a series: the series the table has at least
	for _, n := range counts {
		most = max(most, n)
	}
	rows := make([]seriesRow, 0, most)
	var pages []candidate
	err = b.h.WalkExperiment(ctx, exp, b.o.Rule,
		func(whole []history.Judged) error {
			for _, ser := range history.JudgedSeries(whole) {
				for _, j := range ser {
					j.KeptSamples = nil
					j.Verdict = nightVerdict(j, reported[[2]int64{j.SeriesID, j.RunID}])
					sp := seriesPoint{series: j.SeriesID, view: pointOf(j, "")}
					jobPoints[j.RunID] = append(jobPoints[j.RunID], sp)
					if sb, ok := summaries[j.RunID]; ok {
						sb.Add(j)
						latestPoints[j.RunID] = append(latestPoints[j.RunID], sp)
					}
				}
				last := ser[len(ser)-1]
				lv := nightVerdict(last, reported[[2]int64{last.SeriesID, last.RunID}])
				k := last.Key
				rows = append(rows, seriesRow{ID: last.SeriesID, Implementation: k.Implementation, Case: k.Case, Machine: k.Machine(),
					Status: string(lv.Status), MedianMS: last.MedianMS, At: last.Date})
				if large && rank(lv.Status) == 0 {
					continue // the table of all series says enough about it (pick)
				}
				kept := make([]history.Judged, len(ser))
				for i, j := range ser {
					j.KeptSamples = nil
					kept[i] = j
				}
				pages = append(pages, candidate{id: last.SeriesID, rank: rank(lv.Status), ser: kept})
				if !large && len(rows) > all {
					large = true
					pages = pick(pages, limit)
				}
				if large && len(pages) >= 2*limit {
					pages = pick(pages, limit)
				}
			}
			return ctx.Err()
		})
	if err != nil {
		return v, err
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	if large {
		pages = pick(pages, limit)
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i].id < pages[j].id })
	paged := map[int64]bool{}
	for i, c := range pages {
		if err := ctx.Err(); err != nil {
			return v, fmt.Errorf("write the site: %w", err)
		}
		if len(pages) > 20 && (i+1)%20 == 0 {
			fmt.Fprintf(b.o.Progress, "report: %s: series %d/%d\n", text.Safe(exp), i+1, len(pages))
		}
		if err := b.seriesPage(c.ser, changes[c.id], reported); err != nil {
			return v, err
		}
		paged[c.id] = true
	}
	link := func(prefix string, sp seriesPoint) (pointView, bool) {
		if !paged[sp.series] {
			return sp.view, false
		}
		sp.view.SeriesPage = prefix + seriesFile(sp.series)
		return sp.view, true
	}
	if len(rows) > len(paged) {
		// The series without a page of their own are rows of a table.
		v.AllPage = "series/all-" + shortHash(exp) + ".html"
		v.Total, v.Paged = len(rows), len(paged)
		for i := range rows {
			if paged[rows[i].ID] {
				rows[i].Page = seriesFile(rows[i].ID)
			}
		}
		title := exp + " · all series"
		if err := b.render(v.AllPage, "all.html", map[string]any{"Root": "../", "Title": title, "Experiment": exp,
			"Rows": rows, "Paged": len(paged)}); err != nil {
			return v, err
		}
		b.pages = append(b.pages, Page{Path: v.AllPage, Kind: "series", Title: title})
	} else {
		for _, r := range rows {
			v.Series = append(v.Series, seriesLink{Page: "series/" + seriesFile(r.ID), Implementation: r.Implementation, Case: r.Case,
				Machine: r.Machine, Status: r.Status})
		}
	}
	// Each job's page, with the verdicts that night gave its timings; a
	// run's results.json is read once, for its page and its outcome.
	done := map[string]bool{}
	outcomes := map[int64][2]string{}
	for i, r := range runs {
		if done[r.JobID] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return v, fmt.Errorf("write the site: %w", err)
		}
		done[r.JobID] = true
		if err := b.o.Context.Err(); err != nil {
			return v, fmt.Errorf("write the site: %w", err)
		}
		if len(runs) > 20 && (i+1)%20 == 0 {
			fmt.Fprintf(b.o.Progress, "report: %s: job %d/%d\n", text.Safe(exp), i+1, len(runs))
		}
		last := lastRunOf(runs, r.JobID)
		pts := jobPoints[last.ID]
		sort.SliceStable(pts, func(i, j int) bool { return pts[i].series < pts[j].series })
		var views []pointView
		omitted := 0
		for _, sp := range pts {
			if pv, ok := link("../series/", sp); ok || v.AllPage == "" {
				views = append(views, pv)
			} else {
				omitted++
			}
		}
		outcome, class, err := b.jobPageFor(last, views, omitted, v.AllPage)
		if err != nil {
			return v, err
		}
		if outcome != "" {
			outcomes[last.ID] = [2]string{outcome, class}
		}
	}
	for _, r := range latest {
		l := b.latest(r, summaries[r.ID].Done(), outcomes)
		for _, sp := range latestPoints[r.ID] {
			if pv, ok := link("series/", sp); ok || v.AllPage == "" {
				l.Points = append(l.Points, pv)
			} else {
				l.Omitted++
			}
		}
		v.Latest = append(v.Latest, l)
	}
	return v, nil
}

// jobPage is the base name of a job's page: its id where that is a safe
// file name, else the safe part with a hash of the id.
func (b *builder) jobPage(id string) string {
	if f, ok := b.jobFiles[id]; ok {
		return f
	}
	name := plot.FileName(id)
	if name != id || name == "" || b.usedJobs[strings.ToLower(name)] {
		sum := sha256.Sum256([]byte(id))
		name = strings.Trim(name+"-"+hex.EncodeToString(sum[:4]), "-")
	}
	b.usedJobs[strings.ToLower(name)] = true
	b.jobFiles[id] = name + ".html"
	return name + ".html"
}

func seriesFile(id int64) string { return fmt.Sprintf("%d.html", id) }

// render executes template tmpl with data into the site's path.
func (b *builder) render(path, tmpl string, data map[string]any) error {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, tmpl, data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return writeFile(filepath.Join(b.o.Dir, filepath.FromSlash(path)), buf.Bytes())
}

// latestRuns is the latest run of each kind of machine (GPU model) and
// host, as xrun regress picks them, oldest first.
func latestRuns(runs []history.Run) []history.Run {
	latest := map[string]history.Run{}
	var order []string
	for _, r := range runs {
		k := r.GPU + "\x00" + r.Host + "\x00" + r.Address
		if _, ok := latest[k]; !ok {
			order = append(order, k)
		}
		latest[k] = r
	}
	out := make([]history.Run, 0, len(order))
	for _, k := range order {
		out = append(out, latest[k])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

func lastRunOf(runs []history.Run, id string) history.Run {
	var last history.Run
	for _, r := range runs {
		if r.JobID == id {
			last = r
		}
	}
	return last
}

func latestAt(runs []history.Run) time.Time {
	var t time.Time
	for _, r := range runs {
		if r.At.After(t) {
			t = r.At
		}
	}
	return t
}

func ruleText(ru regress.Rule) string {
	return fmt.Sprintf("the last %d accepted runs at most, at least %d; suspect beyond %g robust σ and %g %% of the baseline's median; confirmed by the next run",
		ru.Window, ru.MinHistory, ru.Score, 100*ru.Floor)
}

// statusClass is the CSS class of a status word.
func statusClass(s string) string {
	switch regress.Status(s) {
	case regress.Regressed, regress.Errored:
		return "regressed"
	case regress.Suspect:
		return "suspect"
	case regress.Improved:
		return "improved"
	case regress.Stable:
		return "stable"
	}
	return "insufficient"
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
