package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// Attach follows a started job to its end: its log streams to m.Err, its
// timeout is kept, and once it ends its results and logs land in the
// store (finalize). Cancelling ctx (Ctrl-C) stops and removes the job
// (interrupt).
func (m *Manager) Attach(ctx context.Context, b backend.Backend, j *store.Job) error {
	return m.attach(ctx, b, j, func() {})
}

// attach is Attach, calling ended as soon as the job is seen to end (not
// when it is interrupted or detached), before its results are fetched.
func (m *Manager) attach(ctx context.Context, b backend.Backend, j *store.Job, ended func()) error {
	// A job a cluster's scheduler holds is said to wait, not to run;
	// waitJob says when it starts.
	s, err := b.State(ctx, j)
	if err == nil && s.Phase == backend.Pending {
		fmt.Fprintf(m.Err, "job %s submitted as %s on %s; it has not started\n", j.ID, Handle(b, j), b.Where())
	} else {
		fmt.Fprintf(m.Err, "job %s running in %s on %s\n", j.ID, Handle(b, j), b.Where())
	}
	logsCtx, stopLogs := context.WithCancel(ctx)
	defer stopLogs()
	logsDone := make(chan struct{})
	// The runner's progress lines become a status line on a terminal.
	view := render.NewLog(render.NewStatus(m.Err, m.ErrTTY))
	defer view.Close()
	go func() {
		defer close(logsDone)
		b.Logs(logsCtx, j, backend.LogOptions{Follow: true}, view, view)
		view.Close()
	}()
	if err == nil && !s.Finished() {
		waitCtx, stopWait := context.WithCancel(ctx)
		detached := make(chan struct{})
		go func() {
			select {
			case <-m.Detach: // nil: never
				close(detached)
				stopWait()
			case <-waitCtx.Done():
			}
		}()
		err = m.waitJob(waitCtx, b, j, s)
		stopWait()
		select {
		case <-detached:
			if ctx.Err() == nil {
				stopLogs()
				fmt.Fprintf(m.Err, "xrun: stdout was closed: job %s goes on detached; follow it with xrun logs -f %s\n", j.ID, j.ID)
				return ErrDetached
			}
		default:
		}
	}
	if ctx.Err() != nil {
		view.Close() // the status line gives way to what the interrupt says
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), StopGrace+30*time.Second)
		defer cancel()
		return m.interrupt(WithAbort(cleanup, abortOf(ctx)), b, j)
	}
	if err != nil && !errors.Is(err, backend.ErrNotFound) {
		return err
	}
	ended()
	// The log's last lines, before the results.
	select {
	case <-logsDone:
	case <-time.After(5 * time.Second):
	}
	if store.Final(j.Status) && j.Finished != nil {
		return nil
	}
	if s, err = b.State(ctx, j); err != nil {
		return err
	}
	if err := m.finalize(ctx, b, j, s); err != nil {
		// The job ended, but nothing says how until its results are in
		// the store (a full disk): the next look copies them.
		return &contract.ExitError{Code: contract.ExitInfra, Err: err}
	}
	return nil
}

// interrupt stops and removes the job of an attached submit on Ctrl-C.
// The record says cancelled first; a second Ctrl-C (abortOf) cuts the
// graceful stop and the copy of the results short, and the job is
// killed and removed all the same.
func (m *Manager) interrupt(ctx context.Context, b backend.Backend, j *store.Job) error {
	fmt.Fprintf(m.Err, "\ninterrupted: stopping and removing %s (Ctrl-C again to skip the graceful stop)\n", Handle(b, j))
	j.Status, j.StoppedBy = result.StatusCancelled, result.StatusCancelled
	m.Store.Save(j)
	graceful, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-abortOf(ctx):
			cancel()
		case <-graceful.Done():
		}
	}()
	b.Stop(graceful, j, 2*time.Second)
	if s, err := b.State(graceful, j); err == nil {
		m.finalize(graceful, b, j, s)
	}
	if graceful.Err() != nil && j.Finished == nil {
		now := time.Now().UTC()
		j.Finished = &now
		m.Store.Save(j)
	}
	if err := b.Remove(ctx, j, true); err != nil && !errors.Is(err, backend.ErrNotFound) {
		return &contract.ExitError{Code: contract.ExitCancelled, Err: fmt.Errorf("job %s interrupted, but removing it failed: %w (remove it with `xrun rm %s`)", j.ID, err, j.ID)}
	}
	fmt.Fprintf(m.Err, "stopped and removed %s of job %s\n", Handle(b, j), j.ID)
	return &contract.ExitError{Code: contract.ExitCancelled}
}

type abortKey struct{}

// WithAbort returns ctx carrying abort, closed on a second Ctrl-C: a
// command that is cleaning up after the first one then drops the graceful
// steps for the fast ones that leave nothing behind.
func WithAbort(ctx context.Context, abort <-chan struct{}) context.Context {
	return context.WithValue(ctx, abortKey{}, abort)
}

// abortOf is ctx's abort channel (nil, never closed, when there is none).
func abortOf(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(abortKey{}).(<-chan struct{})
	return ch
}
