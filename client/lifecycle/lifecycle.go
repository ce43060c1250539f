// Package lifecycle keeps a job's record true to its backend: it reads the
// job's state, enforces the recorded timeout where the backend does not,
// and once the runner has exited decides the final status (jobs.FinalStatus)
// and copies the logs and the runner's output into the job store, once.
// Every command that looks at a job (submit, wait, status, ps, results,
// cancel, rm) goes through it, whatever the backend.
package lifecycle

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/go-units"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/runner/contract"
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
		return s, false, nil // the job failed before it had a container
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

// Expire stops a job that ran past its timeout and records why first.
func Expire(ctx context.Context, b backend.Backend, st *jobs.Store, j *jobs.Job) error {
	j.Status, j.StoppedBy = result.StatusTimeout, result.StatusTimeout
	j.Error = timeoutMessage(j)
	if err := st.Save(j); err != nil {
		return err
	}
	if err := b.Stop(ctx, j, StopGrace); err != nil && !errors.Is(err, backend.ErrNotFound) {
		return fmt.Errorf("stop job %s after its timeout: %w", j.ID, err)
	}
	return nil
}

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
	if err := st.Save(j); err != nil {
		return false, err
	}
	if err := b.Stop(ctx, j, StopGrace); err != nil && !errors.Is(err, backend.ErrNotFound) {
		return false, fmt.Errorf("cancel job %s: %w", j.ID, err)
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
// output and logs into the store. A copy that fails is returned after the
// record is saved.
func Finalize(ctx context.Context, b backend.Backend, st *jobs.Store, j *jobs.Job, s backend.State) error {
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
	fetchErr := FetchOutputs(ctx, b, st, j)
	out := jobs.Outcome{ExitCode: code, OOMKilled: s.OOMKilled, StoppedBy: j.StoppedBy}
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
	switch {
	case s.OOMKilled:
		j.Error = OOMMessage(s.MemoryBytes)
	case stopped:
		// the stopper's reason (expire, cancel) stays
	case r != nil && r.Error != "":
		j.Error = r.Error
	case r != nil && j.Status == result.StatusFailed:
		j.Error = FailureSentence(r)
	case r == nil && j.Status == result.StatusFailed && s.Message != "":
		j.Error = s.Message
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
		if r.Error == "" || stopReason {
			r.Error = j.Error
		}
		if err := result.WriteFile(resPath, r); err != nil {
			return fmt.Errorf("record the status of job %s in its results: %w", j.ID, err)
		}
	}
	if st.Finished != nil {
		st.Finished(j)
	}
	return fetchErr
}

// OOMMessage says that the job was killed for memory, and what its limit was.
func OOMMessage(limit int64) string {
	if limit <= 0 {
		return "container was OOM-killed (no memory limit: the host ran out of memory)"
	}
	return fmt.Sprintf("container was OOM-killed (memory limit %s)", units.BytesSize(float64(limit)))
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
			return werr
		}
		return saveOutput(st, j, rc, err)
	}
	var logs bytes.Buffer
	if err := b.Logs(ctx, j, backend.LogOptions{}, &logs, &logs); err != nil {
		return err
	}
	if err := st.WriteFile(j.ID, jobs.LogsFile, logs.Bytes()); err != nil {
		return err
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
// with err, into the job's store directory.
func saveOutput(st *jobs.Store, j *jobs.Job, rc io.ReadCloser, err error) error {
	if err != nil {
		if errors.Is(err, backend.ErrNotFound) {
			return nil // the runner never wrote anything
		}
		return err
	}
	defer rc.Close()
	dir := filepath.Join(st.Dir(j.ID), jobs.OutDir)
	if err := ExtractTar(rc, dir); err != nil {
		return fmt.Errorf("copy %s of job %s: %w", contract.OutDir, j.ID, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, result.FileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read results of job %s: %w", j.ID, err)
	}
	return st.WriteFile(j.ID, jobs.ResultsFile, data)
}

// ExtractTar writes the regular files and directories of a tar of the
// output directory ("out/...") under dir, dropping the first path element.
// Entries that would land outside dir are refused.
func ExtractTar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
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
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}
