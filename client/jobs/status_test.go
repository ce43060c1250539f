package jobs

import (
	"testing"

	"github.com/xrun-dev/xrun/runner/result"
)

func TestFinalStatus(t *testing.T) {
	tests := []struct {
		name string
		o    Outcome
		want string
	}{
		{"succeeded", Outcome{ExitCode: 0, Results: result.StatusSucceeded}, result.StatusSucceeded},
		{"criteria failed", Outcome{ExitCode: 1, Results: result.StatusCriteriaFailed}, result.StatusCriteriaFailed},
		{"implementation failed", Outcome{ExitCode: 2, Results: result.StatusFailed}, result.StatusFailed},
		{"one worker OOM-killed", Outcome{ExitCode: 2, OOMKilled: true, Results: result.StatusFailed}, result.StatusFailed},
		{"runner OOM-killed", Outcome{ExitCode: 137, OOMKilled: true, Results: result.StatusRunning}, result.StatusFailed},
		{"OOM flag, no results", Outcome{ExitCode: 0, OOMKilled: true}, result.StatusFailed},
		{"runner's own timeout", Outcome{ExitCode: 2, Results: result.StatusTimeout}, result.StatusTimeout},
		{"client's timeout, runner wrote cancelled", Outcome{ExitCode: 130, StoppedBy: result.StatusTimeout, Results: result.StatusCancelled}, result.StatusTimeout},
		{"client's timeout, runner killed", Outcome{ExitCode: 137, StoppedBy: result.StatusTimeout, Results: result.StatusRunning}, result.StatusTimeout},
		{"cancelled", Outcome{ExitCode: 130, StoppedBy: result.StatusCancelled, Results: result.StatusCancelled}, result.StatusCancelled},
		{"cancelled, killed before results", Outcome{ExitCode: 137, StoppedBy: result.StatusCancelled}, result.StatusCancelled},
		{"finished before the cancel", Outcome{ExitCode: 0, StoppedBy: result.StatusCancelled, Results: result.StatusSucceeded}, result.StatusSucceeded},
		{"criteria failed before the timeout", Outcome{ExitCode: 1, StoppedBy: result.StatusTimeout, Results: result.StatusCriteriaFailed}, result.StatusCriteriaFailed},
		{"cancelled while the runner set up", Outcome{ExitCode: 4, StoppedBy: result.StatusCancelled, Results: result.StatusFailed}, result.StatusCancelled},
		{"client's timeout, workers killed", Outcome{ExitCode: 2, StoppedBy: result.StatusTimeout, Results: result.StatusFailed}, result.StatusTimeout},
		{"docker stop", Outcome{ExitCode: 130, Results: result.StatusCancelled}, result.StatusCancelled},
		{"SIGTERM, no results", Outcome{ExitCode: 143}, result.StatusCancelled},
		{"bad spec", Outcome{ExitCode: 3, Results: result.StatusFailed}, result.StatusFailed},
		{"crashed", Outcome{ExitCode: 139, Results: result.StatusRunning}, result.StatusFailed},
		{"exit 0, no results", Outcome{ExitCode: 0}, result.StatusSucceeded},
		{"exit 1, no results", Outcome{ExitCode: 1}, result.StatusCriteriaFailed},
	}
	for _, tt := range tests {
		if got := FinalStatus(tt.o); got != tt.want {
			t.Errorf("%s: FinalStatus(%+v) = %s, want %s", tt.name, tt.o, got, tt.want)
		}
		if !Final(FinalStatus(tt.o)) {
			t.Errorf("%s: %s is not final", tt.name, FinalStatus(tt.o))
		}
	}
}
