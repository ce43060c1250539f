package analyze

import (
	"fmt"

	"github.com/xrun-dev/xrun/runner/result"
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
			why += ": " + firstLine(r.Error)
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
