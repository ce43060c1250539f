package job

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/text"
	"github.com/xrun-dev/xrun/result"
)

// NoNodePrefix begins the error of a job its place dropped before any node
// took it (backend.State.NoNode), on every place.
const NoNodePrefix = "no node took it"

// Outcome turns a finished job into nil (succeeded) or the error that
// says what happened, carrying the exit code xrun exits with: the
// runner's code for the status (docs/architecture.md).
func Outcome(j *store.Job) error { return outcome(j, false) }

// OutcomeShown is Outcome for a job whose error the reader has just seen
// (an attached submit: in its streamed log, or the results table on the
// same terminal): a failure says its exit code and where to look, not the
// error again.
func OutcomeShown(j *store.Job) error { return outcome(j, true) }

func outcome(j *store.Job, errorShown bool) error {
	code, _ := contract.ExitOfStatus(j.Status)
	switch j.Status {
	case result.StatusSucceeded:
		return nil
	case result.StatusCriteriaFailed:
		return &contract.ExitError{Code: code, Err: fmt.Errorf("job %s ran, but its criteria failed (see the results above or `xrun results %s`)", j.ID, j.ID)}
	case result.StatusTimeout:
		if strings.HasPrefix(j.Error, NoNodePrefix) {
			// More time to run would not have helped: a node would.
			return &contract.ExitError{Code: code, Err: fmt.Errorf("job %s never ran: %s (it has no log; ask for what the nodes have, or let it wait longer)", j.ID, text.OneLine(j.Error))}
		}
		if strings.HasSuffix(j.Error, notStartedSuffix) {
			// More time would not have helped: what it waited for would.
			return &contract.ExitError{Code: code, Err: fmt.Errorf("job %s %s: its pod was still waiting for a node, its image or its volumes", j.ID, j.Error)}
		}
		return &contract.ExitError{Code: code, Err: fmt.Errorf("job %s timed out after %s: raise resources.timeout in xrun.yaml or pass --timeout", j.ID, j.Timeout)}
	case result.StatusCancelled:
		// Whoever stopped it, when it was not this store's cancel or Ctrl-C.
		if j.Error != "" && j.Error != result.StatusCancelled && j.StoppedBy == "" || strings.HasPrefix(j.Error, "never started") {
			return &contract.ExitError{Code: code, Err: fmt.Errorf("job %s was cancelled: %s", j.ID, text.OneLine(j.Error))}
		}
		return &contract.ExitError{Code: code, Err: fmt.Errorf("job %s was cancelled", j.ID)}
	case result.StatusFailed:
	default: // removed, or a record that never got a container
		msg := fmt.Sprintf("job %s is %s", j.ID, j.Status)
		if j.Error != "" {
			msg = fmt.Sprintf("job %s: %s", j.ID, text.OneLine(j.Error))
		}
		return &contract.ExitError{Code: contract.ExitInfra, Err: errors.New(msg)}
	}
	if j.ExitCode != nil && (*j.ExitCode == contract.ExitUsage || *j.ExitCode == contract.ExitInfra) {
		code = *j.ExitCode // the runner's bad spec or infrastructure
	}
	msg := fmt.Sprintf("job %s failed", j.ID)
	if j.ExitCode != nil {
		msg += fmt.Sprintf(" with exit code %d", *j.ExitCode)
	}
	if j.Error != "" && !errorShown {
		msg += ": " + text.OneLine(j.Error)
	}
	if j.OOMKilled && !strings.Contains(msg, "resources.memory") {
		msg += "; raise resources.memory in xrun.yaml"
	}
	if strings.HasSuffix(j.Error, notStartedSuffix) {
		// Its runner never started: there is no log to point at.
		return &contract.ExitError{Code: code, Err: fmt.Errorf("%s (it has no log; `xrun status %s` says what it waited for)", msg, j.ID)}
	}
	if errorShown {
		return &contract.ExitError{Code: code, Err: fmt.Errorf("%s (what failed is above; `xrun logs %s`)", msg, j.ID)}
	}
	if strings.Contains(msg, "`xrun logs "+j.ID+"`") {
		return &contract.ExitError{Code: code, Err: errors.New(msg)}
	}
	return &contract.ExitError{Code: code, Err: fmt.Errorf("%s (see `xrun logs %s`)", msg, j.ID)}
}
