// Package job owns a job from its submit to its removal: it records the
// job, reserves its GPUs, makes and starts it on its backend, follows it
// attached or finds it again later (adopting one another store submitted),
// enforces its timeout, stops it, decides how it ended and copies its logs
// and output into the job store, once. It is the only code that writes a
// job's status (client/jobs holds the vocabulary and the store), with one
// mapping from what a backend says to a status (status.go), and one
// cleanup for a submit that stops half-way (submit.go).
//
// The package-level functions act on one job on one backend; a Manager
// adds the store, the backends and where progress goes, for the commands.
package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/store"
)

// Manager runs and follows the jobs of one job store.
type Manager struct {
	Store    *store.Store
	Backends *connect.Set
	// Err receives progress and warnings (stderr); a submit's job log
	// too while it is attached.
	Err io.Writer
	// ErrTTY is Err's terminal, unsanitised, where it is one (nil
	// elsewhere): the job's progress and the build are a status line
	// there (render).
	ErrTTY io.Writer
	// RunnerFor returns the runner binary for a daemon's platform (nil:
	// build.RunnerBinary); tests replace it.
	RunnerFor func(ctx context.Context, goos, goarch string, logf func(string, ...any)) (string, error)
	// Trace, when set (XRUN_TRACE=1), times the steps of a submit on Err.
	Trace bool
	// OnJob, when set, gets the job record as soon as a submit creates it
	// (a fan-out learns each host's job this way).
	OnJob func(*store.Job)
	// Detach, when it closes, leaves an attached job running on its own
	// (stdout was closed): Attach returns ErrDetached.
	Detach <-chan struct{}
	// Finished, when set, is called once a finished job's record and
	// results are in the store (finalize), by whichever command saw it
	// end: the results history imports them there.
	Finished func(*store.Job)
}

// ErrDetached is Attach's error when m.Detach closed: the job goes on.
var ErrDetached = errors.New("detached: the job goes on")

// step returns a function that prints how long a step took, with Trace.
func (m *Manager) step(name string) func() {
	if !m.Trace {
		return func() {}
	}
	start := time.Now()
	return func() {
		fmt.Fprintf(m.Err, "trace: %-14s %6.1f ms\n", name, float64(time.Since(start).Microseconds())/1000)
	}
}

// Refresh brings j up to date from the backend it was submitted to
// (Refresh). A job that never had a backend's handle and is not being
// created has nothing to ask.
func (m *Manager) Refresh(ctx context.Context, j *store.Job) (backend.State, bool, error) {
	if j.ContainerID == "" && j.Status != store.StatusCreated {
		return backend.State{}, false, nil // the job failed before it had a container
	}
	b, err := m.Backends.For(ctx, j)
	if err != nil {
		return backend.State{}, false, err
	}
	return m.refreshOn(ctx, b, j)
}

// Look brings j up to date for a command that shows it (status, ps): a
// host that cannot be asked makes a job that has not ended unknown, with
// why as its error, rather than showing its last status as if it were
// current. It returns the state and whether the backend has the job.
func (m *Manager) Look(ctx context.Context, j *store.Job) (backend.State, bool) {
	s, ok, err := m.Refresh(ctx, j)
	if err != nil && !store.Final(j.Status) {
		if s.Finished() && ctx.Err() != nil {
			// The host said the job ended, and copying its logs and
			// results outlasted this look: the record stays as it was
			// until a look that waits (wait, status) copies them.
			j.Error = fmt.Sprintf("it ended; its logs and results were still being copied when this look stopped waiting (`xrun wait %s` copies them)", j.ID)
			return s, false
		}
		j.Status, j.Error = store.StatusUnknown, err.Error()
	}
	return s, ok && err == nil
}

// EnsureResults brings j up to date and, when the store has no
// results.json for it yet, copies what its runner wrote so far (the
// partial results of a running job). A job whose results were recorded
// with a digest when it ended is never collected again: its container
// may have been changed since, and a missing copy is an error
// (store.CheckResults).
func (m *Manager) EnsureResults(ctx context.Context, j *store.Job) error {
	if m.Store.Has(j.ID, store.ResultsFile) {
		return nil
	}
	if j.ResultsSHA256 != "" {
		return m.Store.CheckResults(j)
	}
	_, ok, err := m.Refresh(ctx, j)
	if err != nil || !ok || m.Store.Has(j.ID, store.ResultsFile) {
		return err
	}
	b, err := m.Backends.For(ctx, j)
	if err != nil {
		return err
	}
	if err := FetchResults(ctx, b, m.Store, j); !errors.Is(err, backend.ErrNotFound) {
		return err
	}
	return nil // nothing written yet
}
