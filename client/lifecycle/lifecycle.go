// Package lifecycle keeps a job's record true to its backend: it reads the
// job's state, enforces the recorded timeout where the backend does not,
// and once the runner has exited decides the final status (jobs.FinalStatus)
// and copies the logs and the runner's output into the job store, once.
// Every command that looks at a job (submit, wait, status, ps, results,
// cancel, rm) goes through it, whatever the backend.
package lifecycle

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/docker/go-units"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/runner/contract"
	"github.com/xrun-dev/xrun/runner/headtail"
	"github.com/xrun-dev/xrun/runner/result"
)

// StopGrace is how long the runner gets to write cancelled results after
// SIGTERM before it is killed.
const StopGrace = 10 * time.Second

// Refresh brings j up to date from its backend: status and exit code, the
// recorded timeout enforced, and once the runner has exited its results
// and logs copied into the store (once). It returns the job's state, or ok
// false when the backend no longer has the job.
func Refresh(ctx context.Context, b backend.Backend, st *jobs.Store, j *jobs.Job) (s backend.State, ok bool, err error) {
	done := jobs.Final(j.Status) && j.Finished != nil
	if j.ContainerID == "" {
		if Abandoned(j, s, false) {
			return s, false, Abandon(ctx, b, st, j)
		}
		return s, false, nil // the job failed before it had a container, or is being created
	}
	s, err = b.State(ctx, j)
	if errors.Is(err, backend.ErrNotFound) {
		if !jobs.Final(j.Status) {
			j.Status = jobs.StatusRemoved
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
		return s, false, Abandon(ctx, b, st, j)
	}
	if !s.Finished() {
		deadline, has := Deadline(j, s)
		if !has || time.Now().Before(deadline) {
			j.Status = jobs.StatusCreated
			if s.Phase == backend.Running {
				j.Status = jobs.StatusRunning
			}
			return s, true, nil
		}
		if err := Expire(ctx, b, st, j); err != nil {
			return s, true, err
		}
		if s, err = b.State(ctx, j); err != nil {
			return s, true, err
		}
	}
	return s, true, Finalize(ctx, b, st, j, s)
}

// Abandoned reports a job that will never start: its record says created,
// its container (when it has one) was never started, and the xrun that
// was creating it is gone (killed during the code copy, say).
func Abandoned(j *jobs.Job, s backend.State, hasContainer bool) bool {
	if j.Status != jobs.StatusCreated || j.Creator == "" {
		return false
	}
	if hasContainer && (s.Phase != backend.Pending || s.Detail != "created") {
		return false
	}
	return jobs.CreatorGone(j.Creator)
}

// Abandon removes what an abandoned job left on its backend (found by its
// label: the record may not know its container) and records it cancelled.
func Abandon(ctx context.Context, b backend.Backend, st *jobs.Store, j *jobs.Job) error {
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
	j.Error = fmt.Sprintf("never started: the xrun that submitted it (pid %d) ended before it started the job; what it had made on %s is removed", jobs.CreatorPID(j.Creator), b.Where())
	return st.Save(j)
}

// Deadline is when a started job must stop, from the timeout recorded on
// the backend (else in the record). A backend that enforces the timeout
// itself has none for the client to keep.
func Deadline(j *jobs.Job, s backend.State) (time.Time, bool) {
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

// Expire stops a job that ran past its timeout and records why first. A
// record that cannot be saved does not keep the job running: it is
// stopped all the same, and the error says what was not recorded.
func Expire(ctx context.Context, b backend.Backend, st *jobs.Store, j *jobs.Job) error {
	j.Status, j.StoppedBy = result.StatusTimeout, result.StatusTimeout
	j.Error = timeoutMessage(j)
	saveErr := st.Save(j)
	if err := b.Stop(ctx, j, StopGrace); err != nil && !errors.Is(err, backend.ErrNotFound) {
		return fmt.Errorf("stop job %s after its timeout: %w", j.ID, err)
	}
	if saveErr != nil {
		return &NotRecordedError{ID: j.ID, Did: "stopped after its timeout", Err: saveErr}
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

func timeoutMessage(j *jobs.Job) string {
	return fmt.Sprintf("ran past its timeout of %s", j.Timeout)
}

// Cancel records j as cancelled, stops it (the runner writes its partial
// results) and finalizes it. A job that already ended is left as it is
// (ended true).
func Cancel(ctx context.Context, b backend.Backend, st *jobs.Store, j *jobs.Job) (ended bool, err error) {
	s, ok, err := Refresh(ctx, b, st, j)
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
	if err := b.Stop(ctx, j, StopGrace); err != nil && !errors.Is(err, backend.ErrNotFound) {
		return false, fmt.Errorf("cancel job %s: %w", j.ID, err)
	}
	if saveErr != nil {
		return false, &NotRecordedError{ID: j.ID, Did: "cancelled", Err: saveErr}
	}
	if s, err = b.State(ctx, j); err == nil {
		return false, Finalize(ctx, b, st, j, s)
	}
	if errors.Is(err, backend.ErrNotFound) {
		// A backend that deletes what it stops (a cancelled Kubernetes
		// Job's pod) leaves nothing more to fetch.
		now := time.Now().UTC()
		j.Finished = &now
		return false, st.Save(j)
	}
	return false, err
}

// Finalize records how a job whose runner exited ended, and copies its
// output and logs into the store. Nothing is final until they are there:
// a copy that fails (a full disk, a lost connection) leaves the record as
// it was, for the next look to try again, and is returned. An output over
// MaxOutputBytes fails the job.
func Finalize(ctx context.Context, b backend.Backend, st *jobs.Store, j *jobs.Job, s backend.State) error {
	fetchErr := FetchOutputs(ctx, b, st, j)
	if fetchErr != nil && !errors.Is(fetchErr, ErrOutputTooLarge) {
		return fetchErr
	}
	code := s.ExitCode
	j.ExitCode = &code
	t := time.Now().UTC()
	if !s.FinishedAt.IsZero() {
		t = s.FinishedAt.UTC()
	}
	j.Finished = &t
	if s.TimedOut && j.StoppedBy == "" {
		j.StoppedBy, j.Error = result.StatusTimeout, timeoutMessage(j)
	}
	out := jobs.Outcome{ExitCode: code, OOMKilled: s.OOMKilled, StoppedBy: j.StoppedBy, Fetched: true}
	resPath := filepath.Join(st.Dir(j.ID), jobs.ResultsFile)
	r, err := result.ReadFile(resPath)
	if err == nil {
		out.Results = r.Status
	} else {
		r = nil
	}
	j.Status = jobs.FinalStatus(out)
	j.OOMKilled = s.OOMKilled
	stopped := j.StoppedBy != "" && j.Status == j.StoppedBy
	// A runner that reached its verdict accounts for its workers, one
	// killed for memory among them; one that did not died with the job.
	verdict := r != nil && r.Status != result.StatusRunning
	switch {
	case fetchErr != nil:
		j.Status, j.Error = result.StatusFailed, fetchErr.Error()
	case stopped:
		// the stopper's reason (expire, cancel) stays
	case verdict && r.Status == result.StatusCancelled && j.StoppedBy == "":
		j.Error = StoppedOutside
	case verdict && r.Error != "":
		j.Error = r.Error
	case verdict && j.Status == result.StatusFailed:
		j.Error = FailureSentence(r)
	case s.OOMKilled:
		j.Error = OOMMessage(s.MemoryBytes)
	case j.Status == result.StatusCancelled && j.StoppedBy == "":
		j.Error = StoppedOutside
	case r == nil && j.Status == result.StatusFailed && (code == 0 || code == 1):
		j.Error = fmt.Sprintf("the runner exited with code %d but left no %s: its output directory was lost or could not be written (see `xrun logs %s`)", code, result.FileName, j.ID)
	case j.Status == result.StatusFailed && s.Message != "":
		j.Error = s.Message
	case r != nil && !verdict && j.Status == result.StatusFailed:
		j.Error = fmt.Sprintf("the runner died before its verdict (exit code %d): see `xrun logs %s`", code, j.ID)
	}
	if err := st.Save(j); err != nil {
		return err
	}
	// The runner knows only that it got SIGTERM: a job stopped for its
	// timeout carries the stopper's reason, not the runner's "cancelled".
	stopReason := stopped && j.Error != "" && r != nil && r.Error != j.Error
	if r != nil && (r.Status != j.Status || stopReason) {
		// The store's results.json says what the record says (a runner
		// stopped for its timeout wrote cancelled, one that died wrote
		// running); out/ keeps the runner's own copy.
		if !verdict {
			// What the runner had under way when it died did not finish.
			r.Interrupt(r.Names(), j.Error)
		}
		r.Status, r.Success = j.Status, j.Status == result.StatusSucceeded
		if stopReason {
			// The runner gave its error to what the stop left not run, and
			// the criteria quote it.
			for _, c := range r.Cases {
				for _, ir := range c.Results {
					if ir != nil && ir.Status == result.ImplNotRun && ir.Error == r.Error {
						ir.Error = j.Error
					}
				}
			}
			quoted := "(" + result.ImplNotRun + ": " + r.Error + ")"
			for i := range r.Criteria {
				r.Criteria[i].Detail = strings.ReplaceAll(r.Criteria[i].Detail, quoted, "("+result.ImplNotRun+": "+j.Error+")")
			}
		}
		if r.Error == "" || stopReason || !verdict {
			r.Error = j.Error
		}
		if err := result.WriteFile(resPath, r); err != nil {
			return fmt.Errorf("record the status of job %s in its results: %w", j.ID, err)
		}
	}
	if st.Finished != nil {
		st.Finished(j)
	}
	return nil
}

// StoppedOutside is the error of a job whose runner was stopped (SIGTERM)
// by neither xrun cancel, Ctrl-C nor its timeout.
const StoppedOutside = "stopped (SIGTERM) by something other than this job store's xrun: docker stop, a Docker daemon restart, a host shutdown, or a cancel whose record could not be saved"

// OOMMessage says that the runner was killed for memory before its
// verdict, and what the job's limit was.
func OOMMessage(limit int64) string {
	if limit <= 0 {
		return "the runner was killed for memory before its verdict (no memory limit: the host ran out of memory)"
	}
	return fmt.Sprintf("the runner was killed for memory before its verdict (the job's limit is %s)", units.BytesSize(float64(limit)))
}

// FetchOutputs copies the job's logs and the runner's output directory
// (results.json among it) into its store directory.
func FetchOutputs(ctx context.Context, b backend.Backend, st *jobs.Store, j *jobs.Job) error {
	if c, ok := b.(backend.Collector); ok {
		logs, rc, err := c.Collect(ctx, j)
		if logs == nil {
			return err // no log at all, as Logs would have said
		}
		if werr := st.WriteFile(j.ID, jobs.LogsFile, logs); werr != nil {
			if rc != nil {
				rc.Close()
			}
			return storeError(st, j, werr)
		}
		return saveOutput(st, j, rc, err)
	}
	// The log goes to the store as it comes, bounded: a job can print
	// without end, and the client's memory must not follow.
	var logErr error
	err := st.WriteFrom(j.ID, jobs.LogsFile, func(w io.Writer) error {
		ht := headtail.New(w, LogHeadBytes, LogTailBytes, "the job's stored log")
		logErr = b.Logs(ctx, j, backend.LogOptions{}, ht, ht)
		if logErr != nil {
			return logErr
		}
		return ht.Close()
	})
	if logErr != nil {
		return logErr
	}
	if err != nil {
		return storeError(st, j, err)
	}
	return FetchResults(ctx, b, st, j)
}

// FetchResults copies the runner's output directory (of a running or an
// exited job) into the job's store directory, and results.json beside the
// record.
func FetchResults(ctx context.Context, b backend.Backend, st *jobs.Store, j *jobs.Job) error {
	rc, err := b.CopyOut(ctx, j)
	return saveOutput(st, j, rc, err)
}

// saveOutput unpacks the output tar rc, which CopyOut or Collect returned
// with err, into the job's store directory: into a new directory that
// replaces the old copy once complete, so that a copy cut short (a full
// disk) leaves the last good one and nothing half-written.
func saveOutput(st *jobs.Store, j *jobs.Job, rc io.ReadCloser, err error) error {
	if err != nil {
		if errors.Is(err, backend.ErrNotFound) {
			return nil // the runner never wrote anything
		}
		return err
	}
	defer rc.Close()
	dir := filepath.Join(st.Dir(j.ID), jobs.OutDir)
	tmp, err := os.MkdirTemp(st.Dir(j.ID), "."+jobs.OutDir+"-*")
	if err != nil {
		return storeError(st, j, err)
	}
	defer os.RemoveAll(tmp)
	if err := ExtractTar(rc, tmp, MaxOutputBytes); err != nil {
		if errors.Is(err, ErrOutputTooLarge) {
			return fmt.Errorf("copy %s of job %s: %w", contract.OutDir, j.ID, err)
		}
		return storeError(st, j, fmt.Errorf("copy %s of job %s: %w", contract.OutDir, j.ID, err))
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return storeError(st, j, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return storeError(st, j, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return storeError(st, j, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, result.FileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read results of job %s: %w", j.ID, err)
	}
	if err := st.WriteFile(j.ID, jobs.ResultsFile, data); err != nil {
		return storeError(st, j, err)
	}
	return nil
}

// LogHeadBytes and LogTailBytes bound the job's log as the store keeps it
// (the start and the end; the runner's own lines are a few kilobytes).
const (
	LogHeadBytes = 8 << 20
	LogTailBytes = 8 << 20
)

// MaxOutputBytes bounds the runner's output directory as the store copies
// it: results, logs (each worker's bounded by the runner) and Nsight
// Compute reports fit many times over.
const MaxOutputBytes = 4 << 30

// ErrOutputTooLarge is an output directory over MaxOutputBytes.
var ErrOutputTooLarge = errors.New("the output directory is larger than the store keeps")

// storeError says what a failed write into the job store means, and what
// to do: a full disk is named as such.
func storeError(st *jobs.Store, j *jobs.Job, err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("the job store's disk is full (%s): free space there, then run `xrun status %s` to copy the job's results again: %w", st.Root, j.ID, err)
	}
	return fmt.Errorf("copy the results of job %s into the store: %w", j.ID, err)
}

// ExtractTar writes the regular files and directories of a tar of the
// output directory ("out/...") under dir, dropping the first path element.
// Entries that would land outside dir are refused, and so is more than
// limit bytes in all (ErrOutputTooLarge).
func ExtractTar(r io.Reader, dir string, limit int64) error {
	tr := tar.NewReader(r)
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "/"))
		if name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("refusing tar entry %q outside the output directory", h.Name)
		}
		_, rest, _ := strings.Cut(name, "/")
		if rest == "" {
			if h.Typeflag == tar.TypeDir {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
			}
			continue
		}
		if rest == ".." || strings.HasPrefix(rest, "../") {
			return fmt.Errorf("refusing tar entry %q outside the output directory", h.Name)
		}
		dst := filepath.Join(dir, filepath.FromSlash(rest))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if total += h.Size; total > limit {
				return fmt.Errorf("%w (more than %s)", ErrOutputTooLarge, units.BytesSize(float64(limit)))
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, io.LimitReader(tr, h.Size))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}
