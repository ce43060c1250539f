package job

import (
	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/result"
)

// StatusOf is a job's status from its backend's state alone: created or
// running before it ends, then what its exit code says (FinalStatus
// without its results: a listing of another store's jobs reads none).
// Refresh and the listings take the status of a job that has not ended
// from here.
func StatusOf(s backend.State) string {
	switch s.Phase {
	case backend.Pending:
		if s.Waiting {
			return store.StatusPending
		}
		return store.StatusCreated
	case backend.Running:
		return store.StatusRunning
	}
	return FinalStatus(Ending{ExitCode: s.ExitCode, OOMKilled: s.OOMKilled})
}

// Ending is what is known of a job once its container has exited.
type Ending struct {
	// ExitCode is the container's exit code.
	ExitCode int
	// OOMKilled is the daemon's flag: the kernel's OOM killer ended a
	// process of the container (the runner, or only one of its workers).
	OOMKilled bool
	// StoppedBy is result.StatusCancelled or result.StatusTimeout when a
	// client stopped the job (Job.StoppedBy), else empty.
	StoppedBy string
	// Results is the status in results.json, empty when there is none.
	Results string
	// Fetched says the job's output was copied and Results read from it.
	// A listing that copies nothing leaves the exit code to decide.
	Fetched bool
}

// FinalStatus decides a finished job's status; submit, wait, status,
// results and ps all take it from here.
//
// A verdict that needs every implementation to have run to the end
// (succeeded, criteria_failed) stands: the runner reached it before any
// stop could matter. Otherwise whoever stopped the job says why: a runner
// sent SIGTERM writes cancelled even when the client stopped it for its
// timeout, and one stopped while it set up may write failed. Then the
// runner's own failed or timeout (its deadline), an OOM kill of one worker
// included (that worker's implementation is recorded as failed). Last
// comes the container's exit code, for a runner that died before it wrote
// a verdict: killed for memory, crashed, or stopped by someone else. A
// runner's success without results (copied, and not there) is a failure:
// nothing shows what it found.
func FinalStatus(o Ending) string {
	switch o.Results {
	case result.StatusSucceeded, result.StatusCriteriaFailed:
		return o.Results
	}
	switch o.StoppedBy {
	case result.StatusCancelled, result.StatusTimeout:
		return o.StoppedBy
	}
	switch o.Results {
	case result.StatusFailed, result.StatusTimeout, result.StatusCancelled:
		return o.Results
	}
	switch {
	case o.OOMKilled:
		return result.StatusFailed
	case o.Fetched && (o.ExitCode == 0 || o.ExitCode == 1):
		return result.StatusFailed
	case o.ExitCode == 0:
		return result.StatusSucceeded
	case o.ExitCode == 1:
		return result.StatusCriteriaFailed
	case o.ExitCode == 124:
		return result.StatusTimeout
	case o.ExitCode == 130 || o.ExitCode == 143: // SIGINT, SIGTERM
		return result.StatusCancelled
	}
	return result.StatusFailed
}
