// Package exit is xrun's exit codes and the error that carries one: the
// runner's codes for the runner's outcomes (contract), and xrun's own
// failures in the same places, so that 1 only ever means the criteria failed.
package exit

import (
	"fmt"

	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// Exit codes of xrun.
const (
	CriteriaFailed = contract.ExitCriteriaFailed // the job ran, but its criteria failed
	Failed         = contract.ExitFailed         // the job failed: an implementation failed or crashed, or it ran out of memory
	Usage          = contract.ExitBadSpec        // bad arguments, spec or job id
	Infra          = contract.ExitInfra          // infrastructure: no daemon, a failed build, an unreadable store
	Timeout        = 124                         // the job ran past its timeout, as timeout(1)
	// Regressed is xrun regress's code for a confirmed regression: the
	// runner never exits with it, and a script tells it from 1 (criteria
	// failed) and 4 (infrastructure).
	Regressed   = 5
	Interrupted = contract.ExitCancelled // cancelled, or interrupted by Ctrl-C
)

// OfStatus is the exit code of a job that ended with status (its record's,
// or its results.json's): the one table that xrun submit, wait, results
// and status-reading commands exit by. ok is false for a status that is no
// job's end (removed, or a record that never got a container), whose code
// the caller decides.
func OfStatus(status string) (code int, ok bool) {
	switch status {
	case result.StatusSucceeded:
		return 0, true
	case result.StatusCriteriaFailed:
		return CriteriaFailed, true
	case result.StatusFailed:
		return Failed, true
	case result.StatusTimeout:
		return Timeout, true
	case result.StatusCancelled:
		return Interrupted, true
	}
	return 0, false
}

// Error carries the process exit code for an error; a job's own exit code
// is mirrored this way. An empty Err prints nothing.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Usagef is a bad command line, spec or job id: exit code 3.
func Usagef(format string, args ...any) error {
	return &Error{Code: Usage, Err: fmt.Errorf(format, args...)}
}

// BadInput marks err (a spec or context that cannot be used) as exit code 3.
func BadInput(err error) error { return &Error{Code: Usage, Err: err} }
