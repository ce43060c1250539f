package analyze

import (
	"fmt"
	"strings"

	"github.com/xrun-dev/xrun/internal/text"
	"github.com/xrun-dev/xrun/result"
)

// Outcome is how a run came out against what its experiment declares: every
// criterion passing, except those written with expect: fail, which are
// declared to fail (the published outcome of a refuted hypothesis).
type Outcome struct {
	// Expected is true when nothing came out otherwise than declared.
	Expected bool `json:"expected"`
	// Declared is false for results written before criteria recorded
	// their declared outcome: every criterion then counts as declared to
	// pass.
	Declared bool `json:"declared"`
	// Worse says what came out worse than declared: the job did not run to
	// its verdict (failed, timed out, cancelled), or a criterion declared
	// to pass failed.
	Worse []string `json:"worse,omitempty"`
	// Better lists the criteria declared to fail that passed.
	Better []string `json:"better,omitempty"`
}

// ExpectedOutcome compares r's status and criteria with the expectations
// recorded in them (result.Criterion.Expect). A skipped criterion (nothing it
// needs ran here, as on a CPU run) matches any expectation.
func ExpectedOutcome(r *result.Results) Outcome {
	var o Outcome
	switch r.Status {
	case result.StatusSucceeded, result.StatusCriteriaFailed:
	default:
		why := "the job is " + r.Status
		if r.Error != "" {
			why += ": " + text.Short(r.Error, 120)
		}
		o.Worse = append(o.Worse, why)
	}
	o.Declared = len(r.Criteria) == 0
	for _, c := range r.Criteria {
		if c.Expect != "" {
			o.Declared = true
		}
	}
	for _, c := range r.Criteria {
		switch {
		case c.Skipped, c.NotEvaluated:
		case c.Passed && c.Expect == result.ExpectFail:
			o.Better = append(o.Better, fmt.Sprintf("%q passed (%s), but the experiment declares that it fails", c.Name, fmtValue(c)))
		case !c.Passed && c.Expect != result.ExpectFail:
			o.Worse = append(o.Worse, fmt.Sprintf("%q failed (%s)", c.Name, fmtValue(c)))
		}
	}
	o.Expected = len(o.Worse) == 0 && len(o.Better) == 0
	return o
}

func fmtValue(c result.Criterion) string {
	if k, ok := kinds[c.Kind]; ok && k.format != nil {
		return fmt.Sprintf("%s against %s", k.format(c.Value), k.format(c.Threshold))
	}
	return fmt.Sprintf("%.4g against %.4g", c.Value, c.Threshold)
}

// NothingCompared says, in one line, that r compared nothing because every
// implementation beside the baseline was skipped on every case (a GPU
// experiment submitted with --cpu): "nothing compared: all 3
// implementations skipped (needs a GPU)". It is "" when something ran to
// be compared, or when nothing was skipped. Such a run still succeeds: the
// skips are what the run was asked for, and the criteria over them are
// skipped, not failed; this line keeps the success from reading as a
// result.
func NothingCompared(r *result.Results) string {
	if len(r.Cases) == 0 {
		return ""
	}
	skipped, reason := 0, ""
	baselineRan := false
	for _, n := range r.Implementations {
		all := true
		for _, c := range r.Cases {
			ir := c.Results[n]
			if ir == nil || ir.Status != result.ImplSkipped {
				all = false
				break
			}
			if why := shortReason(ir.Error); reason == "" {
				reason = why
			} else if why != reason {
				reason = "-"
			}
		}
		switch {
		case all:
			skipped++
		case n == r.Baseline:
			baselineRan = true
		default:
			return "" // a candidate ran on some case
		}
	}
	if skipped == 0 {
		return ""
	}
	beside := ""
	if baselineRan {
		beside = " beside the baseline"
	}
	what := fmt.Sprintf("all %d implementations%s skipped", skipped, beside)
	if skipped == 1 {
		what = fmt.Sprintf("the only implementation%s skipped", beside)
	}
	if reason != "" && reason != "-" {
		what += " (" + reason + ")"
	}
	return "nothing compared: " + what
}

// shortReason is a skip's reason without its details: "needs a GPU" of
// "needs a GPU (requires: triton); this host has none".
func shortReason(s string) string {
	s = text.Short(s, 120)
	if i := strings.IndexAny(s, "(;"); i > 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
