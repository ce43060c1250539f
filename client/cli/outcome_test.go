package cli

import (
	"errors"
	"testing"

	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// A job's outcome and its results file's give the same exit code for
// every status a job ends with: one table (contract.ExitOfStatus) behind both.
func TestOneExitCodePerStatus(t *testing.T) {
	codeOf := func(err error) int {
		var ee *contract.ExitError
		if errors.As(err, &ee) {
			return ee.Code
		}
		if err != nil {
			t.Fatalf("an error without a code: %v", err)
		}
		return 0
	}
	want := map[string]int{
		result.StatusSucceeded: 0, result.StatusCriteriaFailed: 1, result.StatusFailed: 2,
		result.StatusTimeout: 124, result.StatusCancelled: 130,
	}
	for status, code := range want {
		byJob := codeOf(job.Outcome(&store.Job{ID: "j", Status: status}))
		byFile := codeOf(statusOutcome(status, "results.json"))
		if byJob != code || byFile != code {
			t.Errorf("%s: the job exits %d, its results file %d, want %d", status, byJob, byFile, code)
		}
	}
}
