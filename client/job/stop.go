package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docker/go-units"
	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/result"
)

// StopGrace is how long the runner gets to write cancelled results after
// SIGTERM before it is killed.
const StopGrace = 10 * time.Second

// expire stops a job that ran past its timeout and records why first. A
// record that cannot be saved does not keep the job running: it is
// stopped all the same, and the error says what was not recorded.
func (m *Manager) expire(ctx context.Context, b backend.Backend, j *store.Job) error {
	st := m.Store
	j.Status, j.StoppedBy = result.StatusTimeout, result.StatusTimeout
	j.Error = timeoutMessage(j)
	saveErr := st.Save(j)
	stopErr := b.Stop(ctx, j, StopGrace)
	if stopErr != nil && !errors.Is(stopErr, backend.ErrNotFound) {
		return fmt.Errorf("stop job %s after its timeout: %w", j.ID, stopErr)
	}
	if saveErr != nil {
		return &NotRecordedError{ID: j.ID, Did: "stopped after its timeout", Err: saveErr}
	}
	if errors.Is(stopErr, backend.ErrNotStarted) {
		// Deleted before its runner started: it has ended, with nothing
		// to fetch.
		now := time.Now().UTC()
		j.Finished, j.Error = &now, j.Error+notStartedSuffix
		return st.Save(j)
	}
	return nil
}

// NotRecordedError is a stop that happened but could not be recorded in
// the job store (a full or read-only disk): the job is stopped, and the
// next look that can save the record records how it ended.
type NotRecordedError struct {
	ID, Did string
	Err     error
}

func (e *NotRecordedError) Error() string {
	return fmt.Sprintf("job %s was %s, but its record could not be saved (%v): `xrun status %s` records how it ended once the store can be written", e.ID, e.Did, e.Err, e.ID)
}

func (e *NotRecordedError) Unwrap() error { return e.Err }

// notStartedSuffix ends the error of a job that ended before its runner
// started.
const notStartedSuffix = " before its runner started"

// notStartedMessage is the error of a job that ended (status, as the
// record says it) before its runner started.
func notStartedMessage(status string) string {
	if status == result.StatusFailed {
		return "the job ended" + notStartedSuffix
	}
	return status + notStartedSuffix
}

// NotStoppedError is a cancel whose stop failed or did not finish: the
// job may still run, and the record says it was cancelled once it ends.
type NotStoppedError struct {
	ID  string
	Err error
}

func (e *NotStoppedError) Error() string {
	return fmt.Sprintf("cancel job %s: %v", e.ID, e.Err)
}

func (e *NotStoppedError) Unwrap() error { return e.Err }

func timeoutMessage(j *store.Job) string {
	return fmt.Sprintf("ran past its timeout of %s", j.Timeout)
}

// cancelOn records j as cancelled, stops it (the runner writes its partial
// results) and finalizes it. A job that already ended is left as it is
// (ended true).
func (m *Manager) cancelOn(ctx context.Context, b backend.Backend, j *store.Job) (ended bool, err error) {
	st := m.Store
	s, ok, err := m.refreshOn(ctx, b, j)
	if err != nil {
		return false, err
	}
	if !ok || s.Finished() {
		return true, nil
	}
	j.Status, j.StoppedBy = result.StatusCancelled, result.StatusCancelled
	// Recorded before the stop, so that whoever finalizes the job knows
	// who stopped it; a record that cannot be saved does not keep the job
	// running.
	saveErr := st.Save(j)
	stopErr := b.Stop(ctx, j, StopGrace)
	if stopErr != nil && !errors.Is(stopErr, backend.ErrNotFound) {
		return false, &NotStoppedError{ID: j.ID, Err: stopErr}
	}
	if saveErr != nil {
		return false, &NotRecordedError{ID: j.ID, Did: "cancelled", Err: saveErr}
	}
	if s, err = b.State(ctx, j); err == nil {
		return false, m.finalize(ctx, b, j, s)
	}
	if errors.Is(err, backend.ErrNotFound) {
		// A backend that deletes what it stops (a Kubernetes Job whose
		// runner had not started) leaves nothing more to fetch.
		now := time.Now().UTC()
		j.Finished = &now
		if errors.Is(stopErr, backend.ErrNotStarted) {
			j.Error = notStartedMessage(j.Status)
		}
		return false, st.Save(j)
	}
	return false, err
}

// OOMMessage says that the runner was killed for memory before its
// verdict, and what the job's limit was.
func OOMMessage(limit int64) string {
	if limit <= 0 {
		return "the runner was killed for memory before its verdict (no memory limit: the host ran out of memory)"
	}
	return fmt.Sprintf("the runner was killed for memory before its verdict (the job's limit is %s)", units.BytesSize(float64(limit)))
}
