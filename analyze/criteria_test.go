package analyze

import (
	"testing"

	"github.com/xrun-dev/xrun/result"
)

// Conclude records how the client saw a job end: a runner that died leaves
// what it had under way not run for the job's reason; one stopped for its
// timeout has its own stop reason replaced, in the results and in the
// criteria that quote it.
func TestConclude(t *testing.T) {
	died := &result.Results{Status: result.StatusRunning, Implementations: []string{"a"},
		Cases:    []result.Case{{Label: "n=1", Results: map[string]*result.ImplResult{"a": {Status: result.ImplOK}}}},
		Criteria: []result.Criterion{{Name: "c", NotEvaluated: true, Detail: "job running"}}}
	Conclude(died, Conclusion{Status: result.StatusFailed, Reason: "the runner died (exit code 137)"})
	if ir := died.Cases[0].Results["a"]; ir.Status != result.ImplNotRun || ir.Error != "the runner died (exit code 137)" {
		t.Errorf("what the dead runner had under way: %+v", ir)
	}
	if died.Status != result.StatusFailed || died.Success || died.Error != "the runner died (exit code 137)" || died.Criteria[0].Detail != "job failed" {
		t.Errorf("died: %+v", died)
	}
	stopped := &result.Results{Status: result.StatusCancelled, Error: "cancelled", Implementations: []string{"a"},
		Cases: []result.Case{{Label: "n=1", Results: map[string]*result.ImplResult{"a": {Status: result.ImplNotRun, Error: "cancelled"}}}},
		Criteria: []result.Criterion{{Name: "c", Detail: "a did not run (not_run: cancelled) at n=1"},
			{Name: "d", NotEvaluated: true, Detail: "job cancelled"}}}
	Conclude(stopped, Conclusion{Status: result.StatusTimeout, Reason: "ran past its timeout of 3s", Finished: true, StoppedFor: true})
	if ir := stopped.Cases[0].Results["a"]; ir.Error != "ran past its timeout of 3s" {
		t.Errorf("a: %+v", ir)
	}
	if stopped.Criteria[0].Detail != "a did not run (not_run: ran past its timeout of 3s) at n=1" || stopped.Criteria[1].Detail != "job timeout" ||
		stopped.Error != "ran past its timeout of 3s" || stopped.Status != result.StatusTimeout {
		t.Errorf("stopped: %+v", stopped)
	}
}
