package site

// The series pages: which series of an experiment get one, and what each
// shows of its judged points.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/nightly"
	"github.com/xrun-dev/xrun/client/plot"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/internal/table"
)

// seriesPoint is a judged point as the index and job pages show it, with
// its series.
type seriesPoint struct {
	series int64
	view   pointView
}

// seriesRow is a series in an experiment's table of all series: its
// latest timing and verdict.
type seriesRow struct {
	ID                                          int64
	Page, Implementation, Case, Machine, Status string
	MedianMS                                    float64
	At                                          time.Time
}

// candidate is a series that may get a page: its judged points, and how
// much its latest verdict matters to a reader (rank).
type candidate struct {
	id   int64
	rank int
	ser  []history.Judged
}

// rank orders latest verdicts by how much a reader needs the series' page:
// 0 for those the table of all series says enough about.
func rank(s regress.Status) int {
	switch s {
	case regress.Regressed, regress.Errored:
		return 4
	case regress.Suspect:
		return 3
	case regress.Improved:
		return 2
	}
	return 0
}

// pick keeps the n candidates of the highest rank (the lower series id
// first among equals), none of rank 0.
func pick(cs []candidate, n int) []candidate {
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].rank != cs[j].rank {
			return cs[i].rank > cs[j].rank
		}
		return cs[i].id < cs[j].id
	})
	k := 0
	for k < len(cs) && k < n && cs[k].rank > 0 {
		k++
	}
	for i := range cs[k:] {
		cs[k+i] = candidate{} // let the dropped points go
	}
	return cs[:k]
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}

// latest is the index's view of a latest run: the verdicts xrun regress
// reported for it, else those it gives it now (sr, from the experiment's
// walk; its points are the caller's to add). outcomes are those of the
// runs whose results.json the job pages read.
func (b *builder) latest(r history.Run, sr nightly.Run, outcomes map[int64][2]string) latestView {
	l := latestView{JobID: r.JobID, JobPage: "jobs/" + b.jobPage(r.JobID), At: r.At, GPU: r.GPU, Host: publicHost(r.Host, r.Address), Total: sr.Total,
		HostNote: sr.HostNote, Advice: sr.Advice}
	for _, st := range regress.Statuses {
		l.Counts = append(l.Counts, countView{Status: string(st), N: sr.Counts[string(st)]})
	}
	if o, ok := outcomes[r.ID]; ok {
		l.Outcome, l.OutcomeClass = o[0], o[1]
	} else if res := b.results(r, false); res != nil {
		l.Outcome, l.OutcomeClass = outcomeText(res)
	} else {
		l.Outcome = r.Status + " (no results.json at hand to compare with the declared outcome)"
	}
	return l
}

func pointOf(j history.Judged, page string) pointView {
	p := pointView{Case: j.Case, Implementation: j.Implementation, SeriesPage: page, MedianMS: j.MedianMS,
		Status: string(j.Verdict.Status), Text: nightly.StatusText(nightly.Point{Verdict: j.Verdict}), JudgedOn: nightly.JudgedOn(j.Verdict), Change: "-"}
	if j.Verdict.Median > 0 {
		p.Change = table.Change(j.Verdict.Change)
	}
	return p
}

// nightView is one run of a series on its page.
type nightView struct {
	At                   time.Time
	JobID, JobPage, Host string
	MedianMS, Q1MS, Q3MS float64
	Baseline, Change     string
	JudgedOn             string
	Status, Text         string
	Later                string
	ChangePoint          bool
	// Clock is what the GPU did during the timing: "1755 MHz, 580 W
	// (sw_power_cap 3/5)"; "-" without readings.
	Clock string
}

// clockText says what the GPU did during a timing, from its readings.
func clockText(p history.Point) string {
	if p.ClockReadings == 0 {
		return "-"
	}
	s := fmt.Sprintf("%d MHz", p.SMClockMHz)
	if p.PowerW > 0 {
		s += fmt.Sprintf(", %.0f W", p.PowerW)
	}
	if p.ClockReasons != "" {
		s += " (" + p.ClockReasons + ")"
	}
	return s
}

// nightVerdict is the verdict j's run got the night it was judged: the one
// the history kept for it when a change point accepted later made the rule
// read it otherwise (history.Store.MarkChange), else the rule's walk read
// as that night (regress.Verdict.AsReported).
func nightVerdict(j history.Judged, kept regress.Verdict) regress.Verdict {
	if kept.Status != "" {
		return kept
	}
	return j.Verdict.AsReported()
}

// later says what the runs after a value made of its verdict ("" when
// nothing).
func later(v regress.Verdict) string {
	switch {
	case v.ConfirmedBy != "":
		return string(v.Status) + ": confirmed by " + v.ConfirmedBy
	case v.Spike:
		return "spike: the next run did not confirm it"
	}
	return ""
}

// seriesPage writes a series' page and trend figure; changes are its
// change points, reported the experiment's kept verdicts.
func (b *builder) seriesPage(ser []history.Judged, changes []history.ChangePoint, reported map[[2]int64]regress.Verdict) error {
	id := ser[0].SeriesID
	k := ser[0].Key
	name := seriesFile(id)
	values := history.Values(history.PointsOf(ser), changes)
	t := plot.Trend{Title: fmt.Sprintf("%s · %s · %s", k.Experiment, k.Implementation, k.Case), Machine: k.Machine(), Rule: b.o.Rule}
	var nights []nightView
	for i, j := range ser {
		t.Points = append(t.Points, plot.TrendPoint{Run: j.JobID, At: j.Date, MedianMS: j.MedianMS, Q1MS: j.Q1MS, Q3MS: j.Q3MS,
			Verdict: j.Verdict, ChangePoint: values[i].ChangePoint})
		v := nightVerdict(j, reported[[2]int64{id, j.RunID}])
		n := nightView{At: j.Date, JobID: j.JobID, JobPage: "../jobs/" + b.jobPage(j.JobID), Host: j.Host, MedianMS: j.MedianMS,
			Q1MS: j.Q1MS, Q3MS: j.Q3MS, Baseline: "-", Change: "-", JudgedOn: nightly.JudgedOn(v), Status: string(v.Status),
			Text: nightly.StatusText(nightly.Point{Verdict: v}), Later: later(j.Verdict), ChangePoint: values[i].ChangePoint,
			Clock: clockText(j.Point)}
		n.Host = publicHost(j.Host, j.Address)
		if v.Median > 0 {
			n.Baseline = fmt.Sprintf("%s (%d)", table.FixedMS(v.Median), v.Baseline)
			n.Change = table.Change(v.Change)
		}
		nights = append(nights, n)
	}
	base := strings.TrimSuffix(name, ".html")
	fig, err := plot.TrendFigure(t, filepath.Join(b.o.Dir, "series"), "trend-"+base)
	figErr := ""
	if err != nil {
		figErr = err.Error()
	}
	// Newest first: the night a reader looks for is the last one.
	for i, j := 0, len(nights)-1; i < j; i, j = i+1, j-1 {
		nights[i], nights[j] = nights[j], nights[i]
	}
	title := fmt.Sprintf("%s · %s · %s", k.Experiment, k.Implementation, k.Case)
	data := map[string]any{
		"Root": "../", "Title": title, "Key": k, "Machine": k.Machine(), "Nights": nights, "Rule": ruleText(b.o.Rule),
		"PNG": filepath.Base(fig.PNG), "SVG": filepath.Base(fig.SVG), "FigureError": figErr,
		"Advice": neverJudged(ser), "Changes": changes,
	}
	if err := b.render("series/"+name, "series.html", data); err != nil {
		return err
	}
	b.pages = append(b.pages, Page{Path: "series/" + name, Kind: "series", Title: title})
	return nil
}

func neverJudged(ser []history.Judged) string {
	return nightly.NeverJudgedAdvice(ser[len(ser)-1].Verdict)
}
