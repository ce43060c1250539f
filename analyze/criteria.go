package analyze

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/xrun-dev/xrun/internal/table"
	"github.com/xrun-dev/xrun/internal/text"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

// point is one value a criterion looks at: an implementation on a case.
type point struct {
	impl, label string
	value       float64
	missing     string // why there is no value; "" when there is one
	skipped     bool   // the implementation does not run here (no GPU, too old a GPU)
}

// criterionKind says how a kind of criterion reads the results.
type criterionKind struct {
	higherBetter bool
	value        func(ir *result.ImplResult) (float64, bool)
	pass         func(v, threshold float64) bool
	format       func(v float64) string
}

var kinds = map[string]criterionKind{
	"speedup": {higherBetter: true, pass: func(v, th float64) bool { return v >= th },
		format: table.Speedup},
	"max_error": {
		value: func(ir *result.ImplResult) (float64, bool) {
			if ir.Correctness == nil {
				return 0, false
			}
			return ir.Correctness.MaxAbsError, true
		},
		pass:   func(v, th float64) bool { return v < th },
		format: func(v float64) string { return fmt.Sprintf("%.3g", v) }},
	"correct": {higherBetter: true,
		value: func(ir *result.ImplResult) (float64, bool) {
			if ir.Correctness == nil {
				return 0, false
			}
			if ir.Correctness.Passed && ir.Status != result.ImplWrong {
				return 1, true
			}
			return 0, true
		},
		pass: func(v, th float64) bool { return v >= th },
		format: func(v float64) string {
			if v >= 1 {
				return "correct"
			}
			return "wrong"
		}},
	"time": {
		value: func(ir *result.ImplResult) (float64, bool) {
			if t := timing(ir); t != nil {
				return t.MedianMS, true
			}
			return 0, false
		},
		pass:   func(v, th float64) bool { return v < th },
		format: func(v float64) string { return fmt.Sprintf("%.4g ms", v) }},
}

// Criteria evaluates the spec's criteria against r, in the order written,
// and reports whether all passed (true when there are none).
//
// Kinds: speedup (base.median/impl.median >= at_least; with by:
// conservative base.q1/impl.q3), max_error (max abs
// error < below), correct, and time (median ms < below_ms). "for" says over
// which cases: all (default: every case passes; the value is the worst),
// any (some case passes; the value is the best) or median (the median over
// cases passes). An implementation that did not run on a case has no value:
// it counts as failing, and Detail says why. One that was skipped there (a
// GPU-only implementation on a CPU run, an sm_100 one on Hopper) is left
// out; a criterion whose every point was skipped is Skipped, not failed,
// and does not count against success.
// Name defaults to a readable sentence such as "pipelined >= 1.2x over
// baseline at every case".
func Criteria(s *spec.Spec, r *result.Results) (crit []result.Criterion, allPassed bool) {
	crit = []result.Criterion{}
	allPassed = true
	for _, c := range s.Criteria {
		out := evaluate(c, r)
		if why := unfinished(r); why != "" {
			// Partial results say nothing about a criterion: a point the
			// stop left not run would read as failing, and the points
			// that ran are not the whole sweep.
			out.Value, out.Passed, out.Skipped, out.NotEvaluated, out.Detail = 0, false, false, true, why
		}
		crit = append(crit, out)
		allPassed = allPassed && (out.Passed || out.Skipped)
	}
	return crit, allPassed
}

// unfinished says why r's job did not run to its verdict ("job cancelled"),
// or "" when it did (or is still on its way to it). A failed job whose
// implementations failed ran to its verdict, and its criteria say which
// failed; one that failed before any case (its setup) did not.
func unfinished(r *result.Results) string {
	switch {
	case r.Status == result.StatusCancelled, r.Status == result.StatusTimeout,
		r.Status == result.StatusFailed && len(r.Cases) == 0:
		return NotEvaluatedDetail(r.Status)
	}
	return ""
}

// NotEvaluatedDetail is the detail of a criterion of a job that ended with
// status before its verdict.
func NotEvaluatedDetail(status string) string { return "job " + status }

// Conclusion is how a job ended as its client saw it, for Conclude.
type Conclusion struct {
	// Status and Reason are the job's status and error.
	Status, Reason string
	// Finished says the runner reached its verdict.
	Finished bool
	// StoppedFor says the client stopped the job (a cancel, its timeout)
	// for Reason, which replaces the reason the runner gave its stop
	// (it knows only that it got SIGTERM: "cancelled").
	StoppedFor bool
}

// Conclude records in r how its job ended where the client knows it
// better than the runner: the status (a runner stopped for its job's
// timeout wrote cancelled, one that died wrote running) and the reason. A
// runner that did not reach its verdict did not finish what it had under
// way: that is not run with the reason. Results the runner left not run
// for its own stop reason get the client's, the criteria not evaluated say
// the status, and the run's error is the job's where the runner gave none,
// the client stopped the job, or the runner died.
func Conclude(r *result.Results, c Conclusion) {
	if !c.Finished {
		r.Interrupt(r.Names(), c.Reason)
	}
	if c.StoppedFor {
		for _, cs := range r.Cases {
			for _, ir := range cs.Results {
				if ir != nil && ir.Status == result.ImplNotRun && ir.Error == r.Error {
					ir.Error = c.Reason
				}
			}
		}
		// The criteria quote why those did not run (notRun).
		was, now := quoteWhy(result.ImplNotRun, text.Short(r.Error, 120)), quoteWhy(result.ImplNotRun, text.Short(c.Reason, 120))
		for i := range r.Criteria {
			r.Criteria[i].Detail = strings.ReplaceAll(r.Criteria[i].Detail, was, now)
		}
	}
	r.Status, r.Success = c.Status, c.Status == result.StatusSucceeded
	for i := range r.Criteria {
		if cr := &r.Criteria[i]; cr.NotEvaluated {
			cr.Detail = NotEvaluatedDetail(c.Status)
		}
	}
	if r.Error == "" || c.StoppedFor || !c.Finished {
		r.Error = c.Reason
	}
}

func evaluate(c spec.Criterion, r *result.Results) result.Criterion {
	kind := c.Kind()
	k, known := kinds[kind]
	out := result.Criterion{Name: c.Name, Kind: kind, Expect: result.ExpectPass}
	if c.ExpectFail() {
		out.Expect = result.ExpectFail
	}
	if out.Name == "" {
		out.Name = criterionName(c)
	}
	if !known {
		out.Detail = "no kind of criterion is set (speedup, max_error, correct or time)"
		return out
	}
	var pts []point
	switch kind {
	case "speedup":
		out.Threshold = c.AtLeast
		pts = speedupPoints(c.Speedup, c.Over, c.By == "conservative", r)
	case "max_error":
		out.Threshold = c.Below
		pts = implPoints(c.MaxError, r, k.value)
	case "correct":
		out.Threshold = 1
		pts = implPoints(c.Correct, r, k.value)
	case "time":
		out.Threshold = c.BelowMS
		pts = implPoints(c.Time, r, k.value)
	}
	if len(pts) == 0 {
		out.Detail = "no results to evaluate it on"
		return out
	}
	var ran []point
	var skipped []string
	for _, p := range pts {
		if p.skipped {
			if !slices.Contains(skipped, p.missing) {
				skipped = append(skipped, p.missing)
			}
			continue
		}
		ran = append(ran, p)
	}
	if len(ran) == 0 {
		out.Skipped = true
		out.Detail = "not evaluated: " + strings.Join(skipped, "; ")
		return out
	}
	aggregate(&out, ran, k, forOf(c))
	if len(skipped) > 0 {
		out.Detail += "; left out: " + strings.Join(skipped, "; ")
	}
	return out
}

func forOf(c spec.Criterion) string {
	if c.For == "" {
		return "all"
	}
	return c.For
}

// aggregate fills Value, Passed and Detail from the points. A missing point
// takes the worst possible value, so it fails "all", cannot make "any" pass,
// and pulls "median" towards failing.
func aggregate(out *result.Criterion, pts []point, k criterionKind, over string) {
	worst := math.Inf(1)
	if k.higherBetter {
		worst = math.Inf(-1)
	}
	vals := make([]float64, len(pts))
	var present []float64
	var failing []string
	var reasons []string           // why values are missing, first seen first
	where := map[string][]string{} // reason -> case labels
	for i, p := range pts {
		if p.missing != "" {
			vals[i] = worst
			if _, seen := where[p.missing]; !seen {
				reasons = append(reasons, p.missing)
			}
			where[p.missing] = append(where[p.missing], p.label)
			continue
		}
		vals[i] = p.value
		present = append(present, p.value)
		if !k.pass(p.value, out.Threshold) {
			at := p.label
			if p.impl != "" {
				at = p.impl + " at " + p.label
			}
			failing = append(failing, at+" ("+k.format(p.value)+")")
		}
	}
	// better orders values best first.
	better := func(a, b float64) int {
		if k.higherBetter {
			return cmpFloat(b, a)
		}
		return cmpFloat(a, b)
	}
	slices.SortFunc(vals, better)
	slices.SortFunc(present, better)
	var v float64
	switch over {
	case "any":
		v = vals[0]
	case "median":
		n := len(vals)
		v = (vals[(n-1)/2] + vals[n/2]) / 2
	default:
		v = vals[len(vals)-1]
	}
	out.Passed = !math.IsInf(v, 0) && !math.IsNaN(v) && k.pass(v, out.Threshold)
	switch {
	case !math.IsInf(v, 0) && !math.IsNaN(v):
		out.Value = v
	case over == "any" && len(present) > 0:
		out.Value = present[0]
	case len(present) > 0:
		out.Value = present[len(present)-1]
	}
	var parts []string
	for _, why := range reasons {
		parts = append(parts, why+" at "+strings.Join(where[why], ", "))
	}
	if len(failing) > 0 && (over != "any" || !out.Passed) {
		parts = append(parts, "fails at "+strings.Join(failing, ", "))
	}
	if len(parts) == 0 {
		word := map[string]string{"any": "best", "median": "median"}[over]
		if word == "" {
			word = "worst"
		}
		parts = append(parts, fmt.Sprintf("%s of %d results", word, len(pts)))
	}
	out.Detail = strings.Join(parts, "; ")
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// speedupPoints are base.median / impl.median per case, or with
// conservative base.q1 / impl.q3.
func speedupPoints(impl, over string, conservative bool, r *result.Results) []point {
	var pts []point
	for _, c := range r.Cases {
		p := point{label: CaseLabel(c)}
		a, b := c.Results[impl], c.Results[over]
		ta, tb := timing(a), timing(b)
		switch {
		case ta == nil:
			p.missing, p.skipped = notRun(impl, a), isSkipped(a)
		case tb == nil:
			p.missing, p.skipped = notRun(over, b), isSkipped(b)
		default:
			ca, cb := OneClock(*ta, *tb)
			p.value = cb.MedianMS / ca.MedianMS
			if conservative {
				if ca.Q3MS > 0 && cb.Q1MS > 0 {
					p.value = cb.Q1MS / ca.Q3MS
				} else {
					p.missing = fmt.Sprintf("%s or %s has no quartiles for the conservative ratio", impl, over)
				}
			}
		}
		pts = append(pts, p)
	}
	return pts
}

// implPoints reads one value per implementation (or every implementation
// but the reference, for "all") per case.
func implPoints(which string, r *result.Results, value func(*result.ImplResult) (float64, bool)) []point {
	impls := []string{which}
	if which == "all" {
		impls = nil
		for _, n := range r.Implementations {
			if n != result.Reference {
				impls = append(impls, n)
			}
		}
	}
	var pts []point
	for _, c := range r.Cases {
		for _, name := range impls {
			p := point{label: CaseLabel(c)}
			if which == "all" {
				p.impl = name
			}
			ir := c.Results[name]
			if ir == nil {
				p.missing = notRun(name, nil)
			} else if v, ok := value(ir); ok {
				p.value = v
			} else {
				p.missing, p.skipped = notRun(name, ir), isSkipped(ir)
			}
			pts = append(pts, p)
		}
	}
	return pts
}

func isSkipped(ir *result.ImplResult) bool {
	return ir != nil && ir.Status == result.ImplSkipped
}

// notRun says why an implementation has no figure on a case.
func notRun(name string, ir *result.ImplResult) string {
	if ir == nil {
		return name + " has no result"
	}
	why := text.Short(ir.Error, 120)
	switch ir.Status {
	case result.ImplSkipped:
		if why == "" {
			return name + " skipped"
		}
		return name + " skipped: " + why
	case result.ImplOK, result.ImplWrong:
		return name + " has no measurement"
	}
	if why == "" || ir.Status != result.ImplNotRun {
		// A failure is the implementation's result, said where its
		// result is (the table's "not ok", results.json), not again here.
		return name + " did not run (" + ir.Status + ")"
	}
	return name + " did not run " + quoteWhy(ir.Status, why)
}

// quoteWhy is how a criterion's detail quotes why an implementation did
// not run: "(not_run: cancelled)". Conclude finds it there.
func quoteWhy(status, why string) string { return "(" + status + ": " + why + ")" }

// criterionName is the default name: the criterion as a sentence.
func criterionName(c spec.Criterion) string {
	where := map[string]string{"all": "at every case", "any": "at some case", "median": "at the median case"}[forOf(c)]
	who := func(name string) string {
		if name == "all" {
			return "every implementation"
		}
		return name
	}
	switch c.Kind() {
	case "speedup":
		if c.By == "conservative" {
			return fmt.Sprintf("%s >= %gx over %s (conservative: q1 over q3) %s", c.Speedup, c.AtLeast, c.Over, where)
		}
		return fmt.Sprintf("%s >= %gx over %s %s", c.Speedup, c.AtLeast, c.Over, where)
	case "max_error":
		return fmt.Sprintf("max error of %s < %g %s", who(c.MaxError), c.Below, where)
	case "correct":
		return fmt.Sprintf("%s correct %s", who(c.Correct), where)
	case "time":
		return fmt.Sprintf("%s median < %g ms %s", c.Time, c.BelowMS, where)
	}
	return "criterion"
}
