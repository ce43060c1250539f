package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/text"
)

// Wait waits for job j to end and records how it ended: a job another xrun
// is still creating is waited for until it starts (or its creator is
// gone), and a host that stops answering (a daemon restart) is waited
// for too, since the job may well go on there. Ctrl-C stops the waiting,
// not the job.
func (m *Manager) Wait(ctx context.Context, j *store.Job) error {
	if err := m.waitCreated(ctx, j); err != nil {
		return err
	}
	pause, said := time.Second, false
	for {
		err := m.waitEnd(ctx, j)
		if err == nil {
			break
		}
		if !Unreachable(err) || ctx.Err() != nil {
			return err
		}
		if !said {
			fmt.Fprintf(m.Err, "job %s: %s does not answer (%v): waiting for it to come back (Ctrl-C stops waiting; the job goes on)\n", j.ID, j.Host, text.OneLine(err.Error()))
			said = true
		}
		select {
		case <-ctx.Done():
			return &contract.ExitError{Code: contract.ExitCancelled, Err: fmt.Errorf("stopped waiting; job %s was last seen %s", j.ID, j.Status)}
		case <-time.After(pause):
		}
		pause = min(2*pause, 15*time.Second)
	}
	if said {
		fmt.Fprintf(m.Err, "job %s: %s answers again\n", j.ID, j.Host)
	}
	return nil
}

// Unreachable reports an error that says the job's host or cluster does
// not answer (it may come back), rather than what became of the job.
func Unreachable(err error) bool {
	return errors.Is(err, backend.ErrUnreachable) || engine.IsUnreachable(err)
}

// waitEnd brings j up to date and, when it has not ended, waits for it.
func (m *Manager) waitEnd(ctx context.Context, j *store.Job) error {
	s, ok, err := m.Refresh(ctx, j)
	if err != nil || !ok || s.Finished() {
		return err
	}
	b, err := m.Backends.For(ctx, j)
	if err != nil {
		return err
	}
	return m.waitJob(ctx, b, j, s)
}

// waitCreated waits while another xrun creates job j (its record has no
// container yet and its creator runs), reading the record again until the
// job has a container or ended; a creator that is gone leaves the job to
// Refresh, which records it abandoned.
func (m *Manager) waitCreated(ctx context.Context, j *store.Job) error {
	said := false
	for j.ContainerID == "" && j.Status == store.StatusCreated && j.Creator != "" && !store.CreatorGone(j.Creator) {
		if !said {
			fmt.Fprintf(m.Err, "job %s is being created by xrun (pid %d): waiting for it to start\n", j.ID, store.CreatorPID(j.Creator))
			said = true
		}
		select {
		case <-ctx.Done():
			return &contract.ExitError{Code: contract.ExitCancelled, Err: fmt.Errorf("stopped waiting; job %s is still being created", j.ID)}
		case <-time.After(time.Second):
		}
		fresh, err := m.Store.Load(j.ID)
		if err != nil {
			return err
		}
		*j = *fresh
	}
	return nil
}

// waitJob waits for a job that has not ended (state s) to end, stopping it
// at its timeout, reporting a change of its pending state on m.Err, and
// records how it ended. Ctrl-C stops the waiting, not the job.
func (m *Manager) waitJob(ctx context.Context, b backend.Backend, j *store.Job, s backend.State) error {
	if s.Waiting && s.Message != "" {
		m.sayWaiting(j, s)
	}
	for {
		var waitCtx context.Context
		var cancel context.CancelFunc
		deadline, has := Deadline(j, s)
		switch {
		case has && time.Until(deadline) <= runningPoll:
			waitCtx, cancel = context.WithDeadlineCause(ctx, deadline, errTimeout)
		case s.Phase == backend.Pending:
			// Not started: look again in a while, for the deadline that
			// starts with it and for what keeps it waiting.
			waitCtx, cancel = context.WithTimeoutCause(ctx, pendingPoll, errPending)
		default:
			// Running: look again in a while too, for a cluster that puts
			// the job back in its queue (a node that went down, an
			// evicted pod), which no Wait returns for.
			waitCtx, cancel = context.WithTimeoutCause(ctx, runningPoll, errLook)
		}
		_, err := b.Wait(waitCtx, j)
		cause := context.Cause(waitCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return &contract.ExitError{Code: contract.ExitCancelled, Err: fmt.Errorf("stopped waiting; job %s goes on (xrun cancel %s stops it)", j.ID, j.ID)}
		case errors.Is(cause, errTimeout):
			fmt.Fprintf(m.Err, "job %s ran past its timeout of %s: stopping it\n", j.ID, j.Timeout)
			if err := m.expire(ctx, b, j); err != nil {
				return err
			}
			b.Wait(ctx, j)
		case errors.Is(cause, errPending), errors.Is(cause, errLook):
		case err != nil && !errors.Is(err, backend.ErrNotFound):
			return err
		}
		prev := s
		var ok bool
		if s, ok, err = m.refreshOn(ctx, b, j); err != nil || !ok {
			return err
		}
		if prev.Phase == backend.Pending && s.Phase != backend.Pending {
			m.sayStarted(b, j, s)
		}
		if s.Finished() {
			return nil
		}
		if s.Phase == backend.Pending && cause == nil {
			return nil // a container that was never started does not start by itself
		}
		switch {
		case prev.Phase == backend.Running && s.Phase == backend.Pending:
			m.sayRequeued(j, s)
		case s.Phase == backend.Pending && (s.Detail != prev.Detail || s.Message != prev.Message) && s.Message != "":
			m.sayWaiting(j, s)
		}
	}
}

// sayStarted says that job j, which was waiting, has started (and, where
// it was quick, already ended).
func (m *Manager) sayStarted(b backend.Backend, j *store.Job, s backend.State) {
	verb := "running in"
	if s.Finished() {
		verb = "ran in"
	}
	fmt.Fprintf(m.Err, "job %s %s %s on %s\n", j.ID, verb, Handle(b, j), b.Where())
}

// sayWaiting says why job j has not started (state s), and for a job its
// scheduler holds, how to give up.
func (m *Manager) sayWaiting(j *store.Job, s backend.State) {
	next := ""
	if s.Waiting {
		next = fmt.Sprintf(" (xrun cancel %s gives up)", j.ID)
	}
	fmt.Fprintf(m.Err, "job %s is waiting (%s): %s%s\n", j.ID, s.Detail, s.Message, next)
}

// sayRequeued says that job j, which was running, is back in its
// cluster's queue (state s): what the runner printed as it was stopped
// is not the job's end, and it runs again from the start.
func (m *Manager) sayRequeued(j *store.Job, s backend.State) {
	why := s.Message
	if why == "" {
		why = "its node or pod went away: it runs again from the start once it gets a node"
	}
	fmt.Fprintf(m.Err, "job %s is back in the queue (%s): %s (xrun cancel %s gives up)\n", j.ID, s.Detail, why, j.ID)
}

var (
	errTimeout = errors.New("job timeout")
	errPending = errors.New("job pending")
	errLook    = errors.New("look at the running job again")
)

// pendingPoll is how often a job that has not started is looked at again,
// and runningPoll a running one (its Wait goes on between the looks).
var (
	pendingPoll = 5 * time.Second
	runningPoll = 15 * time.Second
)
