package run

import (
	"context"
	"errors"
	"fmt"

	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
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

// NoGPUError is a spec that asks for GPUs on a machine without one. In a
// container it is the host's problem (exit code 4); xrun run --local, where
// the user picks the mode, tells it as a usage error.
type NoGPUError struct {
	GPUs string // resources.gpus as written
	Err  error  // why no GPU was found
	Hint string // how the caller asks for the CPU sweep (Options.CPUHint)
}

func (e *NoGPUError) Error() string {
	hint := e.Hint
	if hint == "" {
		hint = "set XRUN_MODE=cpu (or --mode cpu)"
	}
	return fmt.Sprintf("the spec asks for GPUs (resources.gpus: %s) but this machine has none (%v): %s to run the CPU sweep instead", e.GPUs, e.Err, hint)
}
func (e *NoGPUError) Unwrap() error { return e.Err }

// ExitCode maps Run's outcome to the process exit code.
func ExitCode(r *result.Results, err error) int {
	var se *SpecError
	var ie *InfraError
	var ng *NoGPUError
	switch {
	case errors.As(err, &se):
		return contract.ExitUsage
	case errors.As(err, &ie), errors.As(err, &ng):
		return contract.ExitInfra
	case errors.Is(err, context.Canceled):
		return contract.ExitCancelled
	case err != nil && r == nil:
		return contract.ExitInfra
	}
	if r == nil {
		return contract.ExitInfra
	}
	switch r.Status {
	case result.StatusSucceeded:
		return contract.ExitSucceeded
	case result.StatusCriteriaFailed:
		return contract.ExitCriteriaFailed
	case result.StatusCancelled:
		return contract.ExitCancelled
	case result.StatusFailed, result.StatusTimeout:
		return contract.ExitFailed
	}
	return contract.ExitInfra // still "running": the runner stopped before it finished
}
