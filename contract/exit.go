package contract

import (
	"fmt"

	"github.com/xrun-dev/xrun/result"
)

// Exit codes of the runner and of xrun (docs/architecture.md): xrun exits
// with the runner's codes for the runner's outcomes, and with its own
// failures in the same places, so that 1 only ever means the criteria
// failed.
const (
	ExitSucceeded      = 0   // every implementation ran, was correct, and the criteria passed
	ExitCriteriaFailed = 1   // criteria failed; everything ran and was correct
	ExitFailed         = 2   // an implementation failed (error, wrong result, crash, timeout, OOM), or the job timed out
	ExitUsage          = 3   // bad arguments, spec or job id
	ExitInfra          = 4   // infrastructure: no Python or daemon, output not writable, a failed build or start, an unreadable store
	ExitCancelled      = 130 // cancelled: SIGINT/SIGTERM, Ctrl-C
	// ExitRegressed is xrun regress's code for a confirmed regression: the
	// runner never exits with it, and a script tells it from 1 (criteria
	// failed) and 4 (infrastructure).
	ExitRegressed = 5
	ExitTimeout   = 124 // the job ran past its timeout, as timeout(1)
)

// ExitOfStatus is the exit code of a job that ended with status (its record's,
// or its results.json's): the one table that xrun submit, wait, results
// and status-reading commands exit by. ok is false for a status that is no
// job's end (removed, or a record that never got a container), whose code
// the caller decides.
func ExitOfStatus(status string) (code int, ok bool) {
	switch status {
	case result.StatusSucceeded:
		return 0, true
	case result.StatusCriteriaFailed:
		return ExitCriteriaFailed, true
	case result.StatusFailed:
		return ExitFailed, true
	case result.StatusTimeout:
		return ExitTimeout, true
	case result.StatusCancelled:
		return ExitCancelled, true
	}
	return 0, false
}

// ExitError carries the process exit code for an error; a job's own exit code
// is mirrored this way. An empty Err prints nothing.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Usagef is a bad command line, spec or job id: exit code 3.
func Usagef(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// BadInput marks err (a spec or context that cannot be used) as exit code 3.
func BadInput(err error) error { return &ExitError{Code: ExitUsage, Err: err} }
