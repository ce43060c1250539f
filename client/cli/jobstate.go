package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/backend/dockerhost"
	"github.com/xrun-dev/xrun/client/backend/kube"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/exit"
	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/client/lifecycle"
	"github.com/xrun-dev/xrun/runner/result"
)

// finalStatus reports whether a job status will not change any more.
func finalStatus(s string) bool { return jobs.Final(s) }

// jobBackend returns the backend of the Docker host or cluster that job j
// was submitted to.
func (a *App) jobBackend(ctx context.Context, j *jobs.Job) (backend.Backend, error) {
	if kube.IsRef(j.Host) {
		return a.kubeBackend(ctx, kube.ParseRef(j.Host))
	}
	e, err := a.Engine(ctx, HostSelection{Host: j.Host})
	if err != nil {
		return nil, err
	}
	return dockerhost.New(e), nil
}

// selectedBackend returns the backend the user picked with --host or
// --context (commands that look beyond the job store: ps, rm).
func (a *App) selectedBackend(ctx context.Context, sel HostSelection) (backend.Backend, error) {
	if sel.K8s {
		return a.kubeBackend(ctx, sel.Kube)
	}
	e, err := a.Engine(ctx, sel)
	if err != nil {
		return nil, err
	}
	return dockerhost.New(e), nil
}

// refresh brings j up to date from its backend (lifecycle.Refresh). It
// returns the job's state, or ok false when the backend no longer has it.
func (a *App) refresh(ctx context.Context, j *jobs.Job) (backend.State, bool, error) {
	st, err := a.Store()
	if err != nil {
		return backend.State{}, false, err
	}
	if j.ContainerID == "" && j.Status != jobs.StatusCreated {
		return backend.State{}, false, nil // the job failed before it had a container
	}
	b, err := a.jobBackend(ctx, j)
	if err != nil {
		return backend.State{}, false, err
	}
	return lifecycle.Refresh(ctx, b, st, j)
}

// unreachable reports an error that says the job's host or cluster does not
// answer (it may come back), rather than what became of the job.
func unreachable(err error) bool {
	return errors.Is(err, backend.ErrUnreachable) || engine.IsUnreachable(err)
}

// look brings j up to date for a command that shows it (status, ps): a
// host that cannot be asked makes a job that has not ended unknown, with
// why as its error, rather than showing its last status as if it were
// current. It returns the state and whether the backend has the job.
func (a *App) look(ctx context.Context, j *jobs.Job) (backend.State, bool) {
	s, ok, err := a.refresh(ctx, j)
	if err != nil && !finalStatus(j.Status) {
		j.Status, j.Error = jobs.StatusUnknown, err.Error()
	}
	return s, ok && err == nil
}

// jobOutcome turns a finished job into nil (succeeded) or the error that
// says what happened, carrying the exit code xrun exits with: the
// runner's code for the status (docs/architecture.md).
func jobOutcome(j *jobs.Job) error {
	switch j.Status {
	case result.StatusSucceeded:
		return nil
	case result.StatusCriteriaFailed:
		return &ExitError{Code: ExitCriteriaFailed, Err: fmt.Errorf("job %s ran, but its criteria failed (see the results above or `xrun results %s`)", j.ID, j.ID)}
	case result.StatusTimeout:
		return &ExitError{Code: ExitTimeout, Err: fmt.Errorf("job %s timed out after %s: raise resources.timeout in xrun.yaml or pass --timeout", j.ID, j.Timeout)}
	case result.StatusCancelled:
		// Whoever stopped it, when it was not this store's cancel or Ctrl-C.
		if j.Error != "" && j.Error != result.StatusCancelled && j.StoppedBy == "" || strings.HasPrefix(j.Error, "never started") {
			return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("job %s was cancelled: %s", j.ID, firstLine(j.Error))}
		}
		return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("job %s was cancelled", j.ID)}
	case result.StatusFailed:
	default: // removed, or a record that never got a container
		msg := fmt.Sprintf("job %s is %s", j.ID, j.Status)
		if j.Error != "" {
			msg = fmt.Sprintf("job %s: %s", j.ID, firstLine(j.Error))
		}
		return &ExitError{Code: ExitInfra, Err: errors.New(msg)}
	}
	code := ExitFailed
	if j.ExitCode != nil && (*j.ExitCode == ExitUsage || *j.ExitCode == ExitInfra) {
		code = *j.ExitCode // the runner's bad spec or infrastructure
	}
	msg := fmt.Sprintf("job %s failed", j.ID)
	if j.ExitCode != nil {
		msg += fmt.Sprintf(" with exit code %d", *j.ExitCode)
	}
	if j.Error != "" {
		msg += ": " + firstLine(j.Error)
	}
	if j.OOMKilled && !strings.Contains(msg, "resources.memory") {
		msg += "; raise resources.memory in xrun.yaml"
	}
	return &ExitError{Code: code, Err: fmt.Errorf("%s (see `xrun logs %s`)", msg, j.ID)}
}

// ExitError carries the process exit code for an error (client/exit).
type ExitError = exit.Error

// Exit codes of xrun (client/exit).
const (
	ExitCriteriaFailed = exit.CriteriaFailed
	ExitFailed         = exit.Failed
	ExitUsage          = exit.Usage
	ExitInfra          = exit.Infra
	ExitTimeout        = exit.Timeout
	ExitInterrupted    = exit.Interrupted
)

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// ensureResults brings j up to date and, when the store has no
// results.json for it yet, copies what its runner wrote so far (the
// partial results of a running job).
func (a *App) ensureResults(ctx context.Context, j *jobs.Job) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	if st.Has(j.ID, jobs.ResultsFile) {
		return nil
	}
	_, ok, err := a.refresh(ctx, j)
	if err != nil || !ok || st.Has(j.ID, jobs.ResultsFile) {
		return err
	}
	b, err := a.jobBackend(ctx, j)
	if err != nil {
		return err
	}
	return lifecycle.FetchResults(ctx, b, st, j)
}

// waitJob waits for a job that has not ended (state s) to end, stopping it
// at its timeout, reporting a change of its pending state on stderr, and
// records how it ended. Ctrl-C stops the waiting, not the job.
func (a *App) waitJob(ctx context.Context, b backend.Backend, st *jobs.Store, j *jobs.Job, s backend.State) error {
	for {
		waitCtx, cancel := ctx, context.CancelFunc(func() {})
		deadline, has := lifecycle.Deadline(j, s)
		if has {
			waitCtx, cancel = context.WithDeadlineCause(ctx, deadline, errTimeout)
		} else if s.Phase == backend.Pending {
			// Not started: look again in a while, for the deadline that
			// starts with it and for what keeps it waiting.
			waitCtx, cancel = context.WithTimeoutCause(ctx, pendingPoll, errPending)
		}
		_, err := b.Wait(waitCtx, j)
		cause := context.Cause(waitCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("stopped waiting; job %s goes on (xrun cancel %s stops it)", j.ID, j.ID)}
		case errors.Is(cause, errTimeout):
			fmt.Fprintf(a.Err, "job %s ran past its timeout of %s: stopping it\n", j.ID, j.Timeout)
			if err := lifecycle.Expire(ctx, b, st, j); err != nil {
				return err
			}
			b.Wait(ctx, j)
		case errors.Is(cause, errPending):
		case err != nil && !errors.Is(err, backend.ErrNotFound):
			return err
		}
		prev := s
		var ok bool
		if s, ok, err = lifecycle.Refresh(ctx, b, st, j); err != nil || !ok || s.Finished() {
			return err
		}
		if s.Phase == backend.Pending && cause == nil {
			return nil // a container that was never started does not start by itself
		}
		if s.Phase == backend.Pending && (s.Detail != prev.Detail || s.Message != prev.Message) && s.Message != "" {
			fmt.Fprintf(a.Err, "job %s is waiting (%s): %s\n", j.ID, s.Detail, s.Message)
		}
	}
}

var (
	errTimeout = errors.New("job timeout")
	errPending = errors.New("job pending")
)

// pendingPoll is how often a job that has not started is looked at again.
const pendingPoll = 5 * time.Second
