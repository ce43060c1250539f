package report

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/internal/table"
	"github.com/xrun-dev/xrun/internal/text"
	"github.com/xrun-dev/xrun/result"
)

// Markdown writes r the way the seeds report results: a "Metric | T=1024 |
// T=2048" table with one column per case (labelled by the swept keys),
// rows for each implementation's median time, speedup and verdict over the
// baseline, tokens/s, TFLOPS and GB/s where a model exists, max error and
// correctness (PASS/FAIL/SKIP, reasons as footnotes) and any metrics; then
// the success criteria, the environment, the methodology and the warnings.
//
// Control sequences in what the experiment's code wrote (errors, labels)
// are dropped (text.Safe), and its names and errors are escaped (text.Markdown):
// they read as written in a pull request's comment, never as a link, an
// image, HTML or a table's cell end.
func Markdown(w io.Writer, r *result.Results) error {
	bw := bufio.NewWriter(text.NewSafeWriter(w))
	m := &mdWriter{w: bw}
	m.header(r)
	m.table(r)
	m.autotune(r)
	m.criteria(r)
	m.environment(r)
	m.methodology(r)
	m.warnings(r)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write markdown report: %w", err)
	}
	return nil
}

type mdWriter struct {
	w         *bufio.Writer
	footnotes []string
}

func (m *mdWriter) printf(format string, args ...any) { fmt.Fprintf(m.w, format, args...) }

// footnote returns the marker of text, adding it when new.
func (m *mdWriter) footnote(text string) string {
	for i, f := range m.footnotes {
		if f == text {
			return fmt.Sprintf("[^%d]", i+1)
		}
	}
	m.footnotes = append(m.footnotes, text)
	return fmt.Sprintf("[^%d]", len(m.footnotes))
}

func (m *mdWriter) header(r *result.Results) {
	name := r.Experiment
	if name == "" {
		name = "experiment"
	}
	m.printf("# %s results\n\n", table.MarkdownText(name))
	var facts []string
	if r.JobID != "" {
		facts = append(facts, "**Job**: "+r.JobID)
	}
	facts = append(facts, "**Status**: "+r.Status)
	if !r.CreatedAt.IsZero() {
		facts = append(facts, "**Date**: "+r.CreatedAt.UTC().Format("2006-01-02 15:04 MST"))
	}
	if r.FinishedAt != nil && !r.CreatedAt.IsZero() {
		facts = append(facts, "**Runtime**: "+r.FinishedAt.Sub(r.CreatedAt).Round(1e9).String())
	}
	if g := gpuSummary(r); g != "" {
		facts = append(facts, "**GPU**: "+g)
	} else if r.Mode != "" {
		facts = append(facts, "**Mode**: "+r.Mode)
	}
	m.printf("%s\n\n", strings.Join(facts, " · "))
	if r.Error != "" {
		m.printf("**Error**: %s\n\n", table.MarkdownText(text.Short(r.Error, 160)))
	}
	if s := analyze.NothingCompared(r); s != "" {
		m.printf("**%s**\n\n", s)
	}
	if s := splitLine(r.Split); s != "" {
		m.printf("%s\n\n", table.MarkdownText(s))
	}
}

func gpuSummary(r *result.Results) string {
	if len(r.Env.GPUs) == 0 {
		return ""
	}
	name := r.Env.GPUs[0].Name
	if n := len(r.Env.GPUs); n > 1 {
		return fmt.Sprintf("%d x %s", n, name)
	}
	return name
}

func (m *mdWriter) table(r *result.Results) {
	m.printf("## Results\n\n")
	if len(r.Cases) == 0 {
		m.printf("No case ran.\n\n")
		return
	}
	cols := columns(r)
	cmps := comparisonsOf(r)
	t := &table.Table{Columns: []table.Column{{Head: table.Fig("Metric")}}}
	for _, c := range cols {
		t.Columns = append(t.Columns, table.Column{Head: table.Text(c)})
	}
	// The experiment's own names (implementations, cases, metrics) are
	// text, not markdown (text.Markdown): the figures beside them are xrun's.
	row := func(label string, cell func(c result.Case) string) {
		cells := []table.Cell{table.Text(label)}
		filled := false
		for _, c := range r.Cases {
			v := cell(c)
			if v != "" {
				filled = true
			} else {
				v = "—"
			}
			cells = append(cells, table.Fig(v))
		}
		if filled {
			t.Add(cells...)
		}
	}
	names := implNames(r)
	u := unitsOf(r)
	for _, n := range names {
		if !hasTiming(r, n) {
			continue
		}
		row(n+" ("+u.time.Name+")", func(c result.Case) string {
			ir := c.Results[n]
			if t := timing(ir); t != nil {
				if !t.Converged {
					// As the text table marks it.
					return u.time.Format(t.MedianMS, timeDigits) + "\\*"
				}
				return u.time.Format(t.MedianMS, timeDigits)
			}
			if ir != nil {
				return ir.Status
			}
			return ""
		})
	}
	for _, n := range names {
		if n == r.Baseline {
			continue
		}
		row("Speedup "+n+"/"+r.Baseline, func(c result.Case) string {
			if ir := c.Results[n]; ir != nil && wrong(r, n, ir) {
				return "-"
			}
			if cmp := cmps.of(n, c); cmp != nil {
				return table.Speedup(cmp.Speedup) + " " + cmp.Verdict
			}
			return ""
		})
	}
	through := []struct {
		suffix string
		get    func(t *result.Throughput) (float64, float64)
		format func(float64) string
	}{
		{"tokens/sec", func(t *result.Throughput) (float64, float64) { return t.TokensPerS, 0 }, table.Count},
		{u.flops.Name, func(t *result.Throughput) (float64, float64) { return t.TFLOPS, t.PctPeakFlops },
			func(v float64) string { return u.flops.Format(v, 3) }},
		{u.bw.Name, func(t *result.Throughput) (float64, float64) { return t.GBps, t.PctPeakBW },
			func(v float64) string { return u.bw.Format(v, 3) }},
	}
	for _, tr := range through {
		for _, n := range names {
			row(n+" "+tr.suffix, func(c result.Case) string {
				ir := c.Results[n]
				if ir == nil || ir.Throughput == nil {
					return ""
				}
				v, pct := tr.get(ir.Throughput)
				if v <= 0 {
					return ""
				}
				if pct > 0 {
					return tr.format(v) + " (" + table.Percent(pct) + " of peak)"
				}
				return tr.format(v)
			})
		}
	}
	for _, n := range names {
		row(n+" FLOP/B", func(c result.Case) string {
			ir := c.Results[n]
			if ir == nil || ir.Throughput == nil || ir.Throughput.ArithmeticIntensity <= 0 {
				return ""
			}
			v := strconv.FormatFloat(ir.Throughput.ArithmeticIntensity, 'g', 3, 64)
			if b := ir.Throughput.Bound; b != "" {
				v += " (" + b + "-bound)"
			}
			return v
		})
	}
	for _, n := range names {
		row(n+" max error", func(c result.Case) string {
			if ir := c.Results[n]; ir != nil && ir.Correctness != nil {
				return table.MaxError(ir.Correctness.MaxAbsError)
			}
			return ""
		})
	}
	for _, n := range names {
		if n == result.Reference {
			continue
		}
		row(n+" correctness", func(c result.Case) string { return m.correctness(c.Results[n]) })
	}
	for _, n := range names {
		for _, k := range metricKeys(r, n) {
			row(n+" "+k, func(c result.Case) string {
				if ir := c.Results[n]; ir != nil {
					if v, ok := ir.Metrics[k]; ok {
						return strconv.FormatFloat(v, 'g', 6, 64)
					}
				}
				return ""
			})
		}
	}
	t.WriteMarkdown(m.w)
	m.printf("\n")
	if notConverged(r) {
		m.printf("\\* did not converge: the median is noisy (see warnings)\n\n")
	}
	for i, f := range m.footnotes {
		m.printf("[^%d]: %s\n", i+1, table.MarkdownText(f))
	}
	if len(m.footnotes) > 0 {
		m.printf("\n")
	}
}

// autotune lists the configs the autotuned kernels ran with.
func (m *mdWriter) autotune(r *result.Results) {
	t := autotuneTable(r)
	if len(t.Rows) == 0 {
		return
	}
	m.printf("**Autotuned kernels** (the config each ran with):\n\n")
	t.WriteMarkdown(m.w)
	m.printf("\n")
}

// correctness is PASS, FAIL or SKIP, with a footnote saying why when it is
// not PASS.
func (m *mdWriter) correctness(ir *result.ImplResult) string {
	if ir == nil {
		return ""
	}
	switch {
	case ir.Status == result.ImplSkipped:
		why := text.Short(ir.Error, 160)
		if why == "" {
			return "SKIP"
		}
		return "SKIP" + m.footnote(why)
	case ir.Correctness != nil && ir.Correctness.Passed && ir.Status != result.ImplWrong:
		return "PASS"
	case ir.Correctness != nil:
		why := text.Short(ir.Correctness.Reason, 160)
		if why == "" {
			why = text.Short(ir.Error, 160)
		}
		if why == "" {
			why = fmt.Sprintf("max abs error %s exceeds atol %g + rtol %g x |ref|",
				table.MaxError(ir.Correctness.MaxAbsError), ir.Correctness.Tolerance.Atol, ir.Correctness.Tolerance.Rtol)
		}
		return "FAIL" + m.footnote(why)
	case ir.Status == result.ImplOK:
		return ""
	}
	why := ir.Status
	if e := text.Short(ir.Error, 160); e != "" {
		why += ": " + e
	}
	return "FAIL" + m.footnote(why)
}

func hasTiming(r *result.Results, name string) bool {
	for _, c := range r.Cases {
		if timing(c.Results[name]) != nil {
			return true
		}
	}
	return false
}

func metricKeys(r *result.Results, name string) []string {
	seen := map[string]bool{}
	var keys []string
	for _, c := range r.Cases {
		if ir := c.Results[name]; ir != nil {
			for k := range ir.Metrics {
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
		}
	}
	sort.Strings(keys)
	return keys
}

func (m *mdWriter) criteria(r *result.Results) {
	m.printf("## Success Criteria\n\n")
	if len(r.Criteria) == 0 {
		m.printf("No criteria were given.\n\n")
		return
	}
	for _, c := range r.Criteria {
		m.printf("%s\n", markdownCriterion.line(c))
	}
	verdict := "all criteria passed"
	skipped := 0
	for _, c := range r.Criteria {
		if c.Skipped {
			skipped++
		}
	}
	if skipped > 0 {
		// A skipped criterion did not pass: it was not evaluated here.
		verdict = fmt.Sprintf("every criterion evaluated passed; %d of %d skipped", skipped, len(r.Criteria))
	}
	if !r.Success {
		verdict = "not successful (" + r.Status + ")"
	}
	if declared(r) {
		if o := analyze.ExpectedOutcome(r); o.Expected {
			verdict += ", as the experiment declares"
		} else {
			verdict += "; the experiment declares otherwise: " + strings.Join(append(o.Worse, o.Better...), "; ")
		}
	}
	m.printf("\n**Outcome**: %s\n\n", verdict)
}

func (m *mdWriter) methodology(r *result.Results) {
	m.printf("## Methodology\n\n")
	me := r.Methodology
	var s []string
	switch me.Timer {
	case "cuda_events":
		s = append(s, "Timed with CUDA events on the launch stream, with a device synchronisation around each sample")
	case "perf_counter":
		s = append(s, "Timed on the CPU with time.perf_counter around each call")
	case "":
		s = append(s, "Timed")
	default:
		s = append(s, "Timed with "+me.Timer)
	}
	if me.FlushBytes > 0 {
		s[0] += fmt.Sprintf("; the L2 cache was flushed by reading %d MiB before each sample, outside the timed region", me.FlushBytes>>20)
	}
	if me.TimerFloorMS > 0 {
		s[0] += fmt.Sprintf("; two events around nothing read %.3g µs, a fixed part of every GPU timing", me.TimerFloorMS*1e3)
	}
	if me.CUDAGraph {
		s[0] += "; calls were captured in a CUDA graph"
	}
	switch {
	case me.KernelClock != "":
		s[0] += fmt.Sprintf("; CUPTI's kernel records were read beside the events: a timing on the kernel clock is the span "+
			"from a call's first kernel start to its last kernel end plus one launch (%.3g µs), as Nsight Compute's "+
			"gpu__time_duration counts a kernel, and results.json keeps the events' reading beside it", me.LaunchMS*1e3)
	case me.KernelClockNote != "":
		s[0] += "; no kernel clock (" + me.KernelClockNote + ")"
	}
	switch {
	case me.LaterWarmupMS > 0:
		s = append(s, fmt.Sprintf("each case's first batch warmed up for %g ms after the implementation's untimed first call, "+
			"every later batch for %g ms", me.WarmupMS, me.LaterWarmupMS))
	case me.WarmupMS > 0:
		s = append(s, fmt.Sprintf("each implementation warmed up for %g ms after its untimed first call", me.WarmupMS))
	}
	if me.Rounds > 0 {
		s = append(s, fmt.Sprintf("implementations were timed in %d interleaved rounds", me.Rounds))
	}
	if me.StoppingRule != "" {
		s = append(s, "stopping rule: "+me.StoppingRule)
	}
	if me.Trials > 0 {
		s = append(s, fmt.Sprintf("correctness was checked against the reference on %d trials of fresh seeded inputs", me.Trials))
	}
	th := me.FastThreshold
	if th < 1 {
		th = 1.02
	}
	s = append(s, fmt.Sprintf("times are medians; a speedup is judged on its 95%% interval from the uncertainty of the two medians: "+
		"FAST when the whole interval is above %g, SLOW when it is below 1/%g, SAME when it lies within %g%% either way, "+
		"and AMBIGUOUS when it reaches across that margin", th, th, roundPct(th)))
	if me.ImplTimeoutS > 0 {
		s = append(s, fmt.Sprintf("each implementation ran in its own process with a %g s timeout", me.ImplTimeoutS))
	}
	m.printf("%s.\n\n", strings.Join(s, "; "))
}

func roundPct(th float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat((th-1)*100, 'f', 4, 64), 64)
	return v
}

func (m *mdWriter) warnings(r *result.Results) {
	m.printf("## Warnings\n\n")
	if len(r.Warnings) == 0 {
		m.printf("None.\n")
		return
	}
	for _, w := range r.Warnings {
		var where []string
		if w.Implementation != "" {
			where = append(where, w.Implementation)
		}
		if w.Label != "" {
			where = append(where, w.Label)
		}
		head := "**" + w.Kind + "**"
		if len(where) > 0 {
			head += " (" + strings.Join(where, ", ") + ")"
		}
		m.printf("- %s: %s\n", head, w.Message)
	}
}

// declared reports whether r's experiment declares a criterion to fail,
// which makes the expected outcome worth saying.
func declared(r *result.Results) bool {
	for _, c := range r.Criteria {
		if c.Expect == result.ExpectFail {
			return true
		}
	}
	return false
}
