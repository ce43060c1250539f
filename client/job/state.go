package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/result"
)

// refreshOn brings j up to date from its backend b: status and exit code, the
// recorded timeout enforced, and once the runner has exited its results
// and logs copied into the store (once). It returns the job's state, or ok
// false when the backend no longer has the job.
func (m *Manager) refreshOn(ctx context.Context, b backend.Backend, j *store.Job) (s backend.State, ok bool, err error) {
	st := m.Store
	done := store.Final(j.Status) && j.Finished != nil
	if j.ContainerID == "" && Abandoned(j, s, false) {
		reload(st, j)
		if j.ContainerID == "" && Abandoned(j, s, false) {
			return s, false, m.abandon(ctx, b, j)
		}
	}
	if j.ContainerID == "" {
		return s, false, nil // the job failed before it had a container, or is being created
	}
	s, err = b.State(ctx, j)
	if errors.Is(err, backend.ErrNotFound) {
		if !store.Final(j.Status) {
			j.Status = store.StatusRemoved
			j.Error = "the job's container was removed before its results were fetched"
			return s, false, st.Save(j)
		}
		return s, false, nil
	}
	if err != nil {
		return s, false, err
	}
	if done && s.Finished() {
		return s, true, nil // recorded and fetched already
	}
	if Abandoned(j, s, true) {
		reload(st, j)
		if s, err = b.State(ctx, j); err != nil {
			return s, false, err
		}
		if Abandoned(j, s, true) {
			return s, false, m.abandon(ctx, b, j)
		}
	}
	if !s.Finished() {
		deadline, has := Deadline(j, s)
		if !has || time.Now().Before(deadline) {
			j.Status = StatusOf(s)
			return s, true, nil
		}
		if err := m.expire(ctx, b, j); err != nil {
			return s, true, err
		}
		if j.Finished != nil {
			return s, false, nil // deleted before its runner started
		}
		if s, err = b.State(ctx, j); err != nil {
			return s, true, err
		}
	}
	return s, true, m.finalize(ctx, b, j, s)
}

// Abandoned reports a job that will never start: its record says created,
// its container (when it has one) was never started, and the xrun that
// was creating it is gone (killed during the code copy, say).
func Abandoned(j *store.Job, s backend.State, hasContainer bool) bool {
	if j.Status != store.StatusCreated || j.Creator == "" {
		return false
	}
	if hasContainer && (s.Phase != backend.Pending || s.Detail != "created") {
		return false
	}
	return store.CreatorGone(j.Creator)
}

// reload reads j's record again, for a look that has just found the xrun
// that made the job gone: the record (and the job's state) were read
// before, and that xrun may have made or started the job and recorded it
// just before it ended. It does nothing more now, so a second look at
// both is the last word before the job is taken for abandoned.
func reload(st *store.Store, j *store.Job) {
	if fresh, err := st.Load(j.ID); err == nil {
		*j = *fresh
	}
}

// abandon removes what an abandoned job left on its backend (found by its
// label: the record may not know its container) and records it cancelled.
func (m *Manager) abandon(ctx context.Context, b backend.Backend, j *store.Job) error {
	st := m.Store
	listed, err := b.List(ctx, true)
	if err != nil {
		return fmt.Errorf("remove what job %s left: %w", j.ID, err)
	}
	for _, l := range listed {
		if l.Job.ID == j.ID {
			if err := b.Remove(ctx, &l.Job, true); err != nil && !errors.Is(err, backend.ErrNotFound) {
				return fmt.Errorf("remove what job %s left: %w", j.ID, err)
			}
		}
	}
	now := time.Now().UTC()
	j.Status, j.StoppedBy, j.Finished = result.StatusCancelled, result.StatusCancelled, &now
	j.Error = fmt.Sprintf("never started: the xrun that submitted it (pid %d) ended before it started the job; what it had made on %s is removed", store.CreatorPID(j.Creator), b.Where())
	return st.Save(j)
}

// Deadline is when a started job must stop, from the timeout recorded on
// the backend (else in the record). A backend that enforces the timeout
// itself has none for the client to keep.
func Deadline(j *store.Job, s backend.State) (time.Time, bool) {
	if s.Enforced {
		return time.Time{}, false
	}
	v := s.Timeout
	if v == "" {
		v = j.Timeout
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || s.StartedAt.IsZero() {
		return time.Time{}, false
	}
	return s.StartedAt.Add(d), true
}
