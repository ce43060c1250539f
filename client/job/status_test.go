package job

import (
	"testing"

	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/result"
)

func TestFinalStatus(t *testing.T) {
	tests := []struct {
		name string
		o    Ending
		want string
	}{
		{"succeeded", Ending{ExitCode: 0, Results: result.StatusSucceeded}, result.StatusSucceeded},
		{"criteria failed", Ending{ExitCode: 1, Results: result.StatusCriteriaFailed}, result.StatusCriteriaFailed},
		{"implementation failed", Ending{ExitCode: 2, Results: result.StatusFailed}, result.StatusFailed},
		{"one worker OOM-killed", Ending{ExitCode: 2, OOMKilled: true, Results: result.StatusFailed}, result.StatusFailed},
		{"runner OOM-killed", Ending{ExitCode: 137, OOMKilled: true, Results: result.StatusRunning}, result.StatusFailed},
		{"OOM flag, no results", Ending{ExitCode: 0, OOMKilled: true}, result.StatusFailed},
		{"runner's own timeout", Ending{ExitCode: 2, Results: result.StatusTimeout}, result.StatusTimeout},
		{"client's timeout, runner wrote cancelled", Ending{ExitCode: 130, StoppedBy: result.StatusTimeout, Results: result.StatusCancelled}, result.StatusTimeout},
		{"client's timeout, runner killed", Ending{ExitCode: 137, StoppedBy: result.StatusTimeout, Results: result.StatusRunning}, result.StatusTimeout},
		{"cancelled", Ending{ExitCode: 130, StoppedBy: result.StatusCancelled, Results: result.StatusCancelled}, result.StatusCancelled},
		{"cancelled, killed before results", Ending{ExitCode: 137, StoppedBy: result.StatusCancelled}, result.StatusCancelled},
		{"finished before the cancel", Ending{ExitCode: 0, StoppedBy: result.StatusCancelled, Results: result.StatusSucceeded}, result.StatusSucceeded},
		{"criteria failed before the timeout", Ending{ExitCode: 1, StoppedBy: result.StatusTimeout, Results: result.StatusCriteriaFailed}, result.StatusCriteriaFailed},
		{"cancelled while the runner set up", Ending{ExitCode: 4, StoppedBy: result.StatusCancelled, Results: result.StatusFailed}, result.StatusCancelled},
		{"client's timeout, workers killed", Ending{ExitCode: 2, StoppedBy: result.StatusTimeout, Results: result.StatusFailed}, result.StatusTimeout},
		{"docker stop", Ending{ExitCode: 130, Results: result.StatusCancelled}, result.StatusCancelled},
		{"SIGTERM, no results", Ending{ExitCode: 143}, result.StatusCancelled},
		{"bad spec", Ending{ExitCode: 3, Results: result.StatusFailed}, result.StatusFailed},
		{"crashed", Ending{ExitCode: 139, Results: result.StatusRunning}, result.StatusFailed},
		{"exit 0, no results", Ending{ExitCode: 0}, result.StatusSucceeded},
		{"exit 1, no results", Ending{ExitCode: 1}, result.StatusCriteriaFailed},
	}
	for _, tt := range tests {
		if got := FinalStatus(tt.o); got != tt.want {
			t.Errorf("%s: FinalStatus(%+v) = %s, want %s", tt.name, tt.o, got, tt.want)
		}
		if !store.Final(FinalStatus(tt.o)) {
			t.Errorf("%s: %s is not final", tt.name, FinalStatus(tt.o))
		}
	}
}
