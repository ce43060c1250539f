// Package report renders results.json for people: the seeds' markdown
// tables (one column per case) and a compact terminal table; and several
// jobs' results side by side (Compare).
package report

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/xrun-dev/xrun/internal/table"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

// columns returns one label per case: the values of the sweep keys
// ("T=1024"), or, when cases also differ in parameters that are not swept
// (several sweep groups) or the sweep keys do not tell cases apart, every
// parameter that differs between cases, sweep keys first.
func columns(r *result.Results) []string {
	if len(r.Cases) == 0 {
		return nil
	}
	differ := differingKeys(r.Cases)
	keys := slices.Clone(r.SweepKeys)
	labels := labelsFor(r.Cases, keys)
	extra := false
	for _, k := range differ {
		if !slices.Contains(keys, k) {
			extra = true
		}
	}
	if extra || !unique(labels) {
		keys = keys[:0]
		for _, k := range r.SweepKeys {
			if slices.Contains(differ, k) {
				keys = append(keys, k)
			}
		}
		for _, k := range differ {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		labels = labelsFor(r.Cases, keys)
	}
	for i, l := range labels {
		if l == "" {
			labels[i] = r.Cases[i].Label
		}
		if labels[i] == "" {
			labels[i] = "all"
			if len(r.Cases) > 1 {
				labels[i] = "case " + strconv.Itoa(i+1)
			}
		}
	}
	return labels
}

func labelsFor(cases []result.Case, keys []string) []string {
	out := make([]string, len(cases))
	for i, c := range cases {
		var parts []string
		for _, k := range keys {
			if v, ok := c.Params[k]; ok {
				parts = append(parts, k+"="+spec.FormatValue(v))
			}
		}
		out[i] = strings.Join(parts, " ")
	}
	return out
}

// differingKeys lists, sorted, the parameters whose values are not the same
// in every case.
func differingKeys(cases []result.Case) []string {
	all := map[string]bool{}
	for _, c := range cases {
		for k := range c.Params {
			all[k] = true
		}
	}
	var out []string
	for k := range all {
		first, firstOK := cases[0].Params[k]
		for _, c := range cases[1:] {
			v, ok := c.Params[k]
			if ok != firstOK || spec.FormatValue(v) != spec.FormatValue(first) {
				out = append(out, k)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

func unique(labels []string) bool {
	seen := map[string]bool{}
	for _, l := range labels {
		if seen[l] {
			return false
		}
		seen[l] = true
	}
	return true
}

// implNames is the reference (when it has any result) then the
// implementations, in order, without repeats.
func implNames(r *result.Results) []string {
	var out []string
	add := func(n string) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, c := range r.Cases {
		if c.Results[result.Reference] != nil {
			add(result.Reference)
			break
		}
	}
	for _, n := range r.Implementations {
		add(n)
	}
	return out
}

func timing(ir *result.ImplResult) *result.Timing {
	if ir == nil || ir.Timing == nil || ir.Timing.Samples == 0 || ir.Timing.MedianMS <= 0 {
		return nil
	}
	return ir.Timing
}

// wrong says that impl's result on a case is incorrect, so it gets no speed
// verdict, even in results written before the runner stopped timing it. The
// baseline keeps its place, as the others' speedups are over it.
func wrong(r *result.Results, impl string, ir *result.ImplResult) bool {
	return ir.Status == result.ImplWrong && impl != r.Baseline
}

// comparisons are a run's comparisons by implementation and case: a
// table of a run at the case cap looked up each of its 100,000 cells in
// every comparison, for minutes of CPU.
type comparisons map[string]*result.Comparison

// comparisonsOf indexes r's comparisons (the first of an implementation
// and case, where the document has more than one).
func comparisonsOf(r *result.Results) comparisons {
	cs := make(comparisons, len(r.Comparisons))
	for i := range r.Comparisons {
		k := comparisonKey(r.Comparisons[i].A, r.Comparisons[i].Params)
		if _, ok := cs[k]; !ok {
			cs[k] = &r.Comparisons[i]
		}
	}
	return cs
}

// of is the comparison of impl on case c (nil when there is none).
func (cs comparisons) of(impl string, c result.Case) *result.Comparison {
	return cs[comparisonKey(impl, c.Params)]
}

// comparisonKey names an implementation and a case's parameters, each
// value as the spec writes it (1024 and 1024.0 alike).
func comparisonKey(impl string, params map[string]any) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := []byte(strconv.Quote(impl))
	for _, k := range keys {
		b = append(b, ' ')
		b = strconv.AppendQuote(b, k)
		b = append(b, '=')
		b = strconv.AppendQuote(b, spec.FormatValue(params[k]))
	}
	return string(b)
}

// timeDigits is how many significant digits a time shows.
const timeDigits = 4

// tableUnits are the units of a table's columns, each picked from every
// value the column shows.
type tableUnits struct {
	time, flops, bw table.Unit
}

func unitsOf(r *result.Results) tableUnits {
	var ms, tflops, gbps []float64
	for _, c := range r.Cases {
		for _, ir := range c.Results {
			if t := timing(ir); t != nil {
				ms = append(ms, t.MedianMS, t.Q1MS, t.Q3MS)
			}
			if ir != nil && ir.Throughput != nil {
				tflops = append(tflops, ir.Throughput.TFLOPS)
				gbps = append(gbps, ir.Throughput.GBps)
			}
		}
	}
	return tableUnits{time: table.TimeUnit(ms...), flops: table.FlopsUnit(tflops...), bw: table.BandwidthUnit(gbps...)}
}

// fmtCriterion prints a criterion's value and its bar.
// criterionStyle is how a report lists a criterion: a mark for its
// outcome, its name and what it measured.
type criterionStyle struct {
	// The marks of a criterion that failed, was not evaluated (the job
	// ended before), was skipped, and passed.
	fail, notEvaluated, skipped, passed string
	// declaredPassed and declaredFailed follow the mark of a criterion
	// declared to fail (expect: fail) that passed, and that failed.
	declaredPassed, declaredFailed string
	// format puts the mark and the name together.
	format string
	// detailWhenPassed adds a passed criterion's detail too.
	detailWhenPassed bool
}

var (
	textCriterion = criterionStyle{fail: "FAIL", notEvaluated: "n/a ", skipped: "SKIP", passed: "PASS",
		declaredPassed: " (declared: fail)", declaredFailed: " (declared: fail)", format: "  %s  %s"}
	markdownCriterion = criterionStyle{fail: "❌", notEvaluated: "n/a", skipped: "⏭️", passed: "✅",
		declaredPassed: " (declared to fail)", declaredFailed: " (expected)", format: "- %s **%s**", detailWhenPassed: true}
)

// line is criterion c as st lists it.
func (st criterionStyle) line(c result.Criterion) string {
	mark := st.fail
	switch {
	case c.NotEvaluated:
		mark = st.notEvaluated
	case c.Skipped:
		mark = st.skipped
	case c.Passed:
		mark = st.passed
	}
	if c.Expect == result.ExpectFail && !c.Skipped && !c.NotEvaluated {
		if c.Passed {
			mark += st.declaredPassed
		} else {
			mark += st.declaredFailed
		}
	}
	line := fmt.Sprintf(st.format, mark, c.Name)
	switch {
	case c.NotEvaluated:
		line += ": not evaluated"
	case !c.Skipped:
		line += ": " + fmtCriterion(c)
	}
	if c.Detail != "" && (st.detailWhenPassed || !c.Passed) {
		line += "; " + c.Detail
	}
	return line
}

func fmtCriterion(c result.Criterion) string {
	switch c.Kind {
	case "speedup":
		return fmt.Sprintf("%s (needs >= %gx)", table.Speedup(c.Value), c.Threshold)
	case "max_error":
		return fmt.Sprintf("%s (needs < %g)", table.MaxError(c.Value), c.Threshold)
	case "time":
		return fmt.Sprintf("%s ms (needs < %g ms)", table.Sig(c.Value, timeDigits), c.Threshold)
	case "correct":
		if c.Passed {
			return "correct"
		}
		return "not correct"
	}
	return strconv.FormatFloat(c.Value, 'g', 4, 64)
}
