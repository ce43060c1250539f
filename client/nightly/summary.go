// Report is the report of xrun regress: each run judged against
// its series (client/history, client/regress), counted by status with the
// denominator, the timings that are not stable in a table, the run's
// outcome against the one its experiment declares, and the alert payload
// sent when a regression is confirmed. It renders as text, markdown (the
// nightly's job summary) and JSON.

package nightly

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/internal/table"
	"github.com/xrun-dev/xrun/result"
)

// Report is the judgement of one or more runs.
type Report struct {
	Rule regress.Rule `json:"rule"`
	Runs []Run        `json:"runs"`
	// Regressed counts the confirmed regressions over every run.
	Regressed int `json:"regressed"`
	// Notes say what could not be done (a rerun that failed, a run that
	// cannot be rerun).
	Notes []string `json:"notes,omitempty"`
}

// Run is one run judged.
type Run struct {
	Experiment string    `json:"experiment"`
	JobID      string    `json:"job_id"`
	At         time.Time `json:"at"`
	Status     string    `json:"status"`
	Host       string    `json:"host"`
	GPU        string    `json:"gpu"`
	// Outcome is the run's outcome against its experiment's declared one
	// (nil when its results.json is not at hand).
	Outcome *analyze.Outcome `json:"outcome,omitempty"`
	// Rerun is the job that reran the run's suspects (xrun regress
	// --confirm), whose verdicts confirmed or cleared them.
	Rerun  string         `json:"rerun,omitempty"`
	Counts map[string]int `json:"counts"`
	Total  int            `json:"total"`
	Points []Point        `json:"points"`
	// HostFactor is the median of the points' host factors: 1.09 when the
	// host made every implementation 9 % slower (0: none known).
	HostFactor float64 `json:"host_factor,omitempty"`
	// HostNote says how many timings moved with the host, not on their
	// own.
	HostNote string `json:"host_note,omitempty"`
	// NeverConverged names the timings ("blocked at M=32") whose series
	// has never converged, and Advice the settings to change for them.
	NeverConverged []string `json:"never_converged,omitempty"`
	// NeverJudged names the other timings whose series has been noisy in
	// every run, with the latest reason ("triton at N=8192: timed during
	// a thermal or hardware slowdown: ..."); Advice says what to do.
	NeverJudged []string `json:"never_judged,omitempty"`
	Advice      string   `json:"advice,omitempty"`
}

// Point is one timing of the run with its verdict.
type Point struct {
	Series         int64           `json:"series"`
	Case           string          `json:"case"`
	Implementation string          `json:"implementation"`
	MedianMS       float64         `json:"median_ms,omitempty"`
	Verdict        regress.Verdict `json:"verdict"`
	// Rerun is the rerun's reading of the series, for a suspect that was
	// rerun.
	Rerun *Point `json:"rerun,omitempty"`
	// Figure is the series' trend (xrun regress --plot).
	Figure string `json:"figure,omitempty"`
}

// RunBuilder makes a run's report from its judged points given one at a
// time (history.Store.JudgeEach): it keeps the few fields the report
// needs, not the points.
type RunBuilder struct {
	run     Run
	factors []float64
	moved   int
}

// StartRun starts the report of run.
func StartRun(run history.Run) *RunBuilder {
	out := Run{Experiment: run.Experiment, JobID: run.JobID, At: run.At, Status: run.Status, Host: run.Host, GPU: run.GPU,
		Counts: map[string]int{}}
	if out.Host == "" {
		out.Host = run.Address
	}
	return &RunBuilder{run: out}
}

// Add adds a judged point of the run.
func (b *RunBuilder) Add(j history.Judged) {
	out := &b.run
	out.Points = append(out.Points, Point{Series: j.SeriesID, Case: j.Case, Implementation: j.Implementation,
		MedianMS: j.MedianMS, Verdict: j.Verdict})
	if f := j.Verdict.HostFactor; f > 0 {
		b.factors = append(b.factors, f)
	}
	if j.Verdict.Host != "" {
		b.moved++
	}
	switch {
	case j.Verdict.NeverConverged:
		out.NeverConverged = append(out.NeverConverged, j.Implementation+" at "+j.Case)
	case j.Verdict.NeverJudged:
		out.NeverJudged = append(out.NeverJudged, j.Implementation+" at "+j.Case+": "+j.Verdict.Reason)
	}
}

// Done returns the report of the points added.
func (b *RunBuilder) Done() Run {
	out := b.run
	if len(b.factors) > 0 {
		out.HostFactor, _ = regress.MedianMAD(b.factors)
	}
	if b.moved > 0 {
		word := "slower"
		if out.HostFactor < 1 {
			word = "faster"
		}
		out.HostNote = fmt.Sprintf("the host was %s (all implementations %+.0f %%, host factor %.2f): %d of %d timings moved with it, "+
			"not on their own", word, 100*(out.HostFactor-1), out.HostFactor, b.moved, len(out.Points))
	}
	out.Advice = out.advice(nil)
	out.count()
	return out
}

// count fills Counts and Total from the points' statuses.
func (r *Run) count() {
	r.Counts, r.Total = map[string]int{}, len(r.Points)
	for _, st := range regress.Statuses {
		r.Counts[string(st)] = 0
	}
	for _, p := range r.Points {
		r.Counts[string(p.Verdict.Status)]++
	}
}

// Suspects returns the series of the run's suspects.
func (r *Run) Suspects() []int64 {
	var ids []int64
	for _, p := range r.Points {
		if p.Verdict.Status == regress.Suspect {
			ids = append(ids, p.Series)
		}
	}
	return ids
}

// Confirm applies a rerun's verdicts to the run's suspects: a suspect whose
// series the rerun found regressed (or improved) is confirmed, one it found
// stable was a spike (and counts as stable), and one it could not judge
// stays a suspect.
func (r *Run) Confirm(rerun string, judged []history.Judged) {
	r.Rerun = rerun
	by := map[int64]history.Judged{}
	for _, j := range judged {
		by[j.SeriesID] = j
	}
	for i := range r.Points {
		p := &r.Points[i]
		if p.Verdict.Status != regress.Suspect {
			continue
		}
		j, ok := by[p.Series]
		if !ok {
			continue
		}
		p.Rerun = &Point{Series: j.SeriesID, Case: j.Case, Implementation: j.Implementation, MedianMS: j.MedianMS, Verdict: j.Verdict}
		switch j.Verdict.Status {
		case regress.Regressed, regress.Improved:
			p.Verdict.Status, p.Verdict.ConfirmedBy = j.Verdict.Status, rerun
		case regress.Stable:
			// The rerun cleared it: a spike, and the series stable.
			p.Verdict.Status, p.Verdict.Spike = regress.Stable, true
		}
	}
	r.count()
}

// Finish totals the confirmed regressions.
func (rep *Report) Finish() {
	rep.Regressed = 0
	for _, r := range rep.Runs {
		rep.Regressed += r.Counts[string(regress.Regressed)]
	}
}

// JSON writes the report as indented JSON.
func (rep *Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("write regression report: %w", err)
	}
	return nil
}

// countsLine is "1 regressed, 0 improved, ... of 28 timings".
func (r *Run) countsLine() string {
	var parts []string
	for _, st := range regress.Statuses {
		parts = append(parts, fmt.Sprintf("%d %s", r.Counts[string(st)], st))
	}
	return strings.Join(parts, ", ") + fmt.Sprintf(" of %d timings", r.Total)
}

// outcomeLine says how the run came out against its experiment's
// declaration.
func (r *Run) outcomeLine() string {
	if r.Outcome == nil {
		return "outcome: " + r.Status + " (no results.json at hand to compare with the declared outcome)"
	}
	undeclared := ""
	if !r.Outcome.Declared {
		undeclared = " (results from before declared outcomes: every criterion counts as declared to pass)"
	}
	switch {
	case r.Outcome.Expected:
		return "outcome: " + r.Status + ", as the experiment declares" + undeclared
	case len(r.Outcome.Worse) > 0:
		return "outcome: " + r.Status + ", worse than declared: " + strings.Join(r.Outcome.Worse, "; ") + undeclared
	}
	return "outcome: " + r.Status + ", changed from the declared one: " + strings.Join(r.Outcome.Better, "; ")
}

// shown are the points a table lists: all of them with all, else those
// that are neither stable nor without enough history (the counts say how
// many).
func (r *Run) shown(all bool) []Point {
	var out []Point
	for _, p := range r.Points {
		if st := p.Verdict.Status; all || p.Verdict.Spike || (st != regress.Stable && st != regress.Insufficient) {
			out = append(out, p)
		}
	}
	return out
}

func (r *Run) heading() string {
	return fmt.Sprintf("%s on %s (%s), job %s, %s", r.Experiment, r.GPU, table.OrDash(r.Host), r.JobID, r.At.UTC().Format("2006-01-02 15:04 UTC"))
}

// Text writes each run: its heading, outcome, counts and the table of the
// timings that are not stable (every timing with all).
func (rep *Report) Text(w io.Writer, all bool) error {
	var b strings.Builder
	for i, r := range rep.Runs {
		if i > 0 {
			fmt.Fprintln(&b)
		}
		fmt.Fprintln(&b, r.heading())
		fmt.Fprintf(&b, "  %s\n  %s\n", r.outcomeLine(), r.countsLine())
		if r.HostNote != "" {
			fmt.Fprintf(&b, "  %s\n", r.HostNote)
		}
		if r.Advice != "" {
			fmt.Fprintf(&b, "  %s\n", r.Advice)
		}
		if r.Rerun != "" {
			fmt.Fprintf(&b, "  suspects rerun at once as job %s\n", r.Rerun)
		}
		if pts := r.shown(all); len(pts) > 0 {
			pointTable(pts).WriteText(&b, "  ")
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write regression report: %w", err)
	}
	return nil
}

// Markdown writes the report as the nightly's job summary: a table of the
// runs with their counts, then each run's timings that are not stable.
func (rep *Report) Markdown(w io.Writer, all bool) error {
	var b strings.Builder
	var exps []string
	for _, r := range rep.Runs {
		if !contains(exps, r.Experiment) {
			exps = append(exps, r.Experiment)
		}
	}
	fmt.Fprintf(&b, "## Regressions: %s\n\n", table.MarkdownText(strings.Join(exps, ", ")))
	runs := &table.Table{Columns: table.Heads("experiment", "GPU", "job", "outcome")}
	for _, st := range regress.Statuses {
		runs.Columns = append(runs.Columns, table.Heads(string(st))...)
	}
	for _, r := range rep.Runs {
		outcome := r.Status
		switch {
		case r.Outcome == nil:
		case r.Outcome.Expected:
			outcome += " ✅ as declared"
		case len(r.Outcome.Worse) > 0:
			outcome += " ❌ worse than declared"
		default:
			outcome += " ⚠️ changed"
		}
		cells := []table.Cell{table.Text(r.Experiment), table.Text(r.GPU), table.Code(r.JobID), table.Fig(outcome)}
		for _, st := range regress.Statuses {
			n := r.Counts[string(st)]
			cell := fmt.Sprintf("%d/%d", n, r.Total)
			if st == regress.Regressed && n > 0 {
				cell = fmt.Sprintf("**%d/%d** ❌", n, r.Total)
			}
			cells = append(cells, table.Fig(cell))
		}
		runs.Add(cells...)
	}
	runs.WriteMarkdown(&b)
	for _, r := range rep.Runs {
		pts := r.shown(all)
		notes := r.Outcome != nil && !r.Outcome.Expected
		if len(pts) == 0 && !notes && r.Rerun == "" && r.HostNote == "" && r.Advice == "" {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\n", table.MarkdownText(r.heading()))
		if notes {
			fmt.Fprintf(&b, "%s\n\n", table.MarkdownText(r.outcomeLine()))
		}
		if r.HostNote != "" {
			fmt.Fprintf(&b, "%s.\n\n", table.MarkdownText(upper(r.HostNote)))
		}
		if r.Advice != "" {
			fmt.Fprintf(&b, "⚠️ %s\n\n", table.MarkdownText(r.Advice))
		}
		if r.Rerun != "" {
			fmt.Fprintf(&b, "Suspects rerun at once as job %s.\n\n", table.Code(r.Rerun).Markdown())
		}
		if len(pts) == 0 {
			continue
		}
		t := pointTable(pts)
		for i, p := range pts {
			if p.Figure != "" {
				// The status links its series' trend figure.
				last := &t.Rows[i][len(t.Rows[i])-1]
				*last = table.Fig(last.Markdown() + fmt.Sprintf(" ([trend](%s))", filepath.ToSlash(p.Figure)))
			}
		}
		t.WriteMarkdown(&b)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "\n> %s\n", table.MarkdownText(n))
	}
	fmt.Fprintf(&b, "\n<sub>Each timing is judged against the last %d accepted runs of its series (at least %d): suspect when "+
		"more than %g robust σ and %g %% from their median, regressed or improved once the next run (a rerun at once, or the next "+
		"night) agrees; a candidate on its ratio to the run's baseline implementation, the baseline on its time over the run's "+
		"host factor, so that a host that slowed every implementation alike is no regression; counts are of the run's timings "+
		"(docs/regressions.md).</sub>\n", rep.Rule.Window, rep.Rule.MinHistory, rep.Rule.Score, 100*rep.Rule.Floor)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write regression report: %w", err)
	}
	return nil
}

// pointTable is the table of a run's points, a row each (cols).
func pointTable(pts []Point) *table.Table {
	t := &table.Table{Columns: []table.Column{table.Col("CASE", "case"), table.Col("IMPL", "impl"),
		table.Col("MEDIAN ms", "median ms"), table.Col("BASELINE ms (n)", "baseline ms (n)"), table.Col("CHANGE", "change"),
		table.Col("SCORE", "score"), table.Col("p", "p"), table.Col("JUDGED ON", "judged on"), table.Col("STATUS", "status")}}
	for _, p := range pts {
		var cells []table.Cell
		for _, c := range cols(p) {
			cells = append(cells, table.Text(c))
		}
		t.Add(cells...)
	}
	return t
}

// cols renders a point: its case, implementation, median, the baseline's
// median and size, the change, the robust score, the rank test's p-value
// and the status.
func cols(p Point) []string {
	v := p.Verdict
	ms, base, change, score, pv := "-", "-", "-", "-", "-"
	if p.MedianMS > 0 {
		ms = table.FixedMS(p.MedianMS)
	}
	if v.Median > 0 {
		base = fmt.Sprintf("%s (%d)", table.FixedMS(v.Median), v.Baseline)
		change = table.Change(v.Change)
		score = fmtScore(v.Score)
	} else if v.Baseline > 0 || v.Status == regress.Insufficient {
		base = fmt.Sprintf("- (%d)", v.Baseline)
	}
	if v.PValue != nil {
		pv = fmtP(*v.PValue)
	}
	return []string{p.Case, p.Implementation, ms, base, change, score, pv, JudgedOn(v), StatusText(p)}
}

// JudgedOn says what the status judged, when it is not the time itself:
// "ratio to control +20.1% (score 12.3)".
func JudgedOn(v regress.Verdict) string {
	r := v.Relative
	switch {
	case v.Status == regress.Noisy || v.Status == regress.Errored:
		return "-"
	case r == nil:
		return "time"
	case r.Median <= 0:
		return r.Of
	}
	return fmt.Sprintf("%s %s (score %s)", r.Of, table.Change(r.Change), fmtScore(r.Score))
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// StatusText says a point's status with what qualifies it: the direction
// of a suspect, the run that confirmed it, a spike, the reason for noise.
func StatusText(p Point) string {
	v := p.Verdict
	s := string(v.Status)
	switch v.Status {
	case regress.Suspect:
		s += " (" + v.Direction + ")"
		if v.Spike {
			s += ", not confirmed (spike)"
		}
	case regress.Stable:
		switch {
		case v.Spike:
			s += ": a " + v.Direction + " spike the rerun did not confirm"
		case v.Host != "":
			s += ": " + v.Host
		}
	case regress.Regressed, regress.Improved:
		switch {
		case v.ConfirmedBy != "":
			s += ", confirmed by " + v.ConfirmedBy
		case v.Confirms != "":
			s += ", confirms " + v.Confirms
		}
	case regress.Noisy, regress.Errored:
		if v.Reason != "" {
			s += ": " + v.Reason
		}
		switch {
		case v.NeverConverged:
			s += " (never converged: no baseline)"
		case v.NeverJudged:
			s += " (never judged: every run noisy, no baseline)"
		}
	}
	if p.Rerun != nil && v.Status == regress.Suspect && !v.Spike {
		s += fmt.Sprintf("; the rerun was %s", p.Rerun.Verdict.Status)
	}
	if v.ConfigChange != "" {
		s += "; " + v.ConfigChange
	}
	return s
}

func fmtScore(s float64) string {
	switch {
	case s >= math.MaxFloat64:
		return "+inf (MAD 0)"
	case s <= -math.MaxFloat64:
		return "-inf (MAD 0)"
	}
	return strconv.FormatFloat(s, 'f', 1, 64)
}

func fmtP(p float64) string {
	if p < 1e-4 {
		return "<1e-4"
	}
	return strconv.FormatFloat(p, 'g', 2, 64)
}

// advice is what to do about the run's series that have never been
// judged: ConvergenceAdvice for those that never converged (with the run's
// results, res, where at hand), NeverJudgedAdvice for the others.
func (r *Run) advice(res *result.Results) string {
	var parts []string
	if n := len(r.NeverConverged); n > 0 {
		parts = append(parts, ConvergenceAdvice(res, n))
	}
	switch n := len(r.NeverJudged); {
	case n == 1:
		parts = append(parts, "never judged: "+r.NeverJudged[0]+"; every run of its series was noisy, so it has no baseline")
	case n > 1:
		parts = append(parts, fmt.Sprintf("%d timings have never been judged: every run of their series was noisy, so they have no baseline (%s)",
			n, strings.Join(r.NeverJudged, "; ")))
	}
	return strings.Join(parts, ". ")
}

// WithResults sets the run's advice again with its results at hand,
// which say what the timings that never converged used and reached.
func (r *Run) WithResults(res *result.Results) { r.Advice = r.advice(res) }

// NeverJudgedAdvice says, for a series whose latest value v is noisy with
// no clean value before it, that it has never been judged and why, and
// what to do where something can be done ("" for any other series).
func NeverJudgedAdvice(v regress.Verdict) string {
	switch {
	case v.NeverConverged:
		return ConvergenceAdvice(nil, 1)
	case !v.NeverJudged:
		return ""
	}
	s := "never judged: every run of this series was noisy (latest: " + v.Reason + "), so it has no baseline"
	switch {
	case strings.HasPrefix(v.Reason, regress.SlowdownReason):
		s += "; the GPU slowed itself down for heat or by its board's protection in every run: check its cooling and power " +
			"(nvidia-smi -q -d PERFORMANCE names the slowdown)"
	case v.Reason == history.BusyHost:
		s += "; other processes used the job's CPUs in every run: reserve them (xrun submit --cpus N, resources.cpus)"
	case v.Reason == history.LegacyThrottled:
		s += "; runs from now on are judged by their own clock readings"
	}
	return s
}

// ConvergenceAdvice says what to do about n timings whose series have
// never converged, naming the spec's settings; with the run's results at
// hand (nil: without), what the run used and reached.
func ConvergenceAdvice(res *result.Results, n int) string {
	s := fmt.Sprintf("%d timings have never converged (every run noisy: %s), so their series have no baseline and are never judged: "+
		"raise benchmark.method.max_time_s or benchmark.method.target_rse in the experiment's xrun.yaml", n, regress.NotConverged)
	if n == 1 {
		s = fmt.Sprintf("this timing has never converged (every run noisy: %s), so its series has no baseline and is never judged: "+
			"raise benchmark.method.max_time_s or benchmark.method.target_rse in the experiment's xrun.yaml", regress.NotConverged)
	}
	if res == nil {
		return s + " (xrun results shows each timing's relative standard error against the target)"
	}
	m := res.Methodology
	lo, hi := math.Inf(1), 0.0
	for _, c := range res.Cases {
		for _, ir := range c.Results {
			if t := ir.Timing; t != nil && !t.Converged && t.StderrRel > 0 {
				lo, hi = math.Min(lo, t.StderrRel), math.Max(hi, t.StderrRel)
			}
		}
	}
	s += fmt.Sprintf("; this run gave up at max_time_s %g s", m.MaxTimeS)
	if hi > 0 && m.TargetRSE > 0 {
		s += fmt.Sprintf(" with relative standard errors of %.1f-%.1f %% against target_rse %g (%.1f %%)", 100*lo, 100*hi, m.TargetRSE, 100*m.TargetRSE)
		// The standard error falls as one over the root of the samples.
		need := m.MaxTimeS * (hi / m.TargetRSE) * (hi / m.TargetRSE)
		took := time.Duration(need * float64(time.Second)).Round(time.Second)
		if need > 60 {
			s += fmt.Sprintf(": at that spread the target takes about %s per timing, so on a host this busy raise target_rse to what it reaches (about %.2g)",
				took, math.Ceil(100*hi)/100)
		} else {
			s += fmt.Sprintf(": at that spread the target takes about %s per timing: raise max_time_s to about %.0f", took, math.Ceil(need*1.2))
		}
	}
	return s
}
