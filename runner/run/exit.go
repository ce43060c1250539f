package run

import (
	"context"
	"errors"

	"github.com/xrun-dev/xrun/runner/result"
)

// Exit codes of the runner (docs/architecture.md).
const (
	ExitSucceeded      = 0   // every implementation ran, was correct, and the criteria passed
	ExitCriteriaFailed = 1   // criteria failed; everything ran and was correct
	ExitFailed         = 2   // an implementation failed (error, wrong result, crash, timeout, OOM), or the job timed out
	ExitBadSpec        = 3   // bad spec or bad arguments
	ExitInfra          = 4   // infrastructure: no Python, output not writable, harness failed to start
	ExitCancelled      = 130 // SIGINT/SIGTERM
)

// SpecError is a bad spec or bad arguments (exit code 3).
type SpecError struct{ Err error }

func (e *SpecError) Error() string { return e.Err.Error() }
func (e *SpecError) Unwrap() error { return e.Err }

// InfraError is a problem with the machine rather than the experiment: no
// usable Python, an output directory that cannot be written, no GPU where
// one was asked for (exit code 4).
type InfraError struct{ Err error }

func (e *InfraError) Error() string { return e.Err.Error() }
func (e *InfraError) Unwrap() error { return e.Err }

// ExitCode maps Run's outcome to the process exit code.
func ExitCode(r *result.Results, err error) int {
	var se *SpecError
	var ie *InfraError
	switch {
	case errors.As(err, &se):
		return ExitBadSpec
	case errors.As(err, &ie):
		return ExitInfra
	case errors.Is(err, context.Canceled):
		return ExitCancelled
	case err != nil && r == nil:
		return ExitInfra
	}
	if r == nil {
		return ExitInfra
	}
	switch r.Status {
	case result.StatusSucceeded:
		return ExitSucceeded
	case result.StatusCriteriaFailed:
		return ExitCriteriaFailed
	case result.StatusCancelled:
		return ExitCancelled
	case result.StatusFailed, result.StatusTimeout:
		return ExitFailed
	}
	return ExitInfra // still "running": the runner stopped before it finished
}
