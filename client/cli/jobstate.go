package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/xrun-dev/xrun/runner/contract"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/go-units"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/runner/result"
)

// stopGrace is how long the runner gets to write cancelled results after
// SIGTERM before the daemon kills it.
const stopGrace = 10 * time.Second

// finalStatus reports whether a job status will not change any more.
func finalStatus(s string) bool { return jobs.Final(s) }

// refresh brings j up to date from its container: status and exit code,
// the recorded timeout enforced, and once the container has exited its
// results and logs copied into the store (once). It returns the container,
// or ok false when the host no longer has it.
func (a *App) refresh(ctx context.Context, j *jobs.Job) (c engine.Container, ok bool, err error) {
	st, err := a.Store()
	if err != nil {
		return c, false, err
	}
	done := finalStatus(j.Status) && j.Finished != nil
	if j.ContainerID == "" {
		return c, false, nil // the job failed before it had a container
	}
	e, err := a.jobEngine(ctx, j)
	if err != nil {
		return c, false, err
	}
	c, err = e.Inspect(ctx, j.ContainerID)
	if errors.Is(err, engine.ErrNotFound) {
		if !finalStatus(j.Status) {
			j.Status = jobs.StatusRemoved
			j.Error = "the container was removed from the host before its results were fetched"
			return c, false, st.Save(j)
		}
		return c, false, nil
	}
	if err != nil {
		return c, false, err
	}
	if done && c.Finished() {
		return c, true, nil // recorded and fetched already
	}
	if !c.Finished() {
		if deadline, has := timeoutDeadline(j, c); has && time.Now().After(deadline) {
			if err := a.expire(ctx, e, j); err != nil {
				return c, true, err
			}
			if c, err = e.Inspect(ctx, j.ContainerID); err != nil {
				return c, true, err
			}
		} else {
			j.Status = c.State
			if c.State == "created" {
				j.Status = jobs.StatusCreated
			}
			return c, true, nil
		}
	}
	return c, true, a.finalize(ctx, e, j, c)
}

// timeoutDeadline is when a started job must stop, from its label.
func timeoutDeadline(j *jobs.Job, c engine.Container) (time.Time, bool) {
	s := c.Labels[contract.LabelTimeout]
	if s == "" {
		s = j.Timeout
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || c.StartedAt.IsZero() {
		return time.Time{}, false
	}
	return c.StartedAt.Add(d), true
}

// expire stops a job that ran past its timeout and records why.
func (a *App) expire(ctx context.Context, e engine.Engine, j *jobs.Job) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	j.Status, j.StoppedBy = result.StatusTimeout, result.StatusTimeout
	j.Error = fmt.Sprintf("ran past its timeout of %s", j.Timeout)
	if err := st.Save(j); err != nil {
		return err
	}
	if err := e.Stop(ctx, j.ContainerID, stopGrace); err != nil && !errors.Is(err, engine.ErrNotFound) {
		return fmt.Errorf("stop job %s after its timeout: %w", j.ID, err)
	}
	return nil
}

// finalize records how an exited container ended and copies its output
// and logs into the store.
func (a *App) finalize(ctx context.Context, e engine.Engine, j *jobs.Job, c engine.Container) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	code := c.ExitCode
	j.ExitCode = &code
	if !c.FinishedAt.IsZero() {
		t := c.FinishedAt.UTC()
		j.Finished = &t
	} else {
		t := time.Now().UTC()
		j.Finished = &t
	}
	fetchErr := a.fetchOutputs(ctx, e, j)
	out := jobs.Outcome{ExitCode: code, OOMKilled: c.OOMKilled, StoppedBy: j.StoppedBy}
	resPath := filepath.Join(st.Dir(j.ID), jobs.ResultsFile)
	r, err := result.ReadFile(resPath)
	if err == nil {
		out.Results = r.Status
	} else {
		r = nil
	}
	j.Status = jobs.FinalStatus(out)
	j.OOMKilled = c.OOMKilled
	switch {
	case c.OOMKilled:
		j.Error = oomMessage(c.MemoryBytes)
	case j.StoppedBy != "" && j.Status == j.StoppedBy:
		// the stopper's reason (expire, cancel) stays
	case r != nil && r.Error != "":
		j.Error = r.Error
	case r != nil && j.Status == result.StatusFailed:
		j.Error = failureSentence(r)
	}
	if err := st.Save(j); err != nil {
		return err
	}
	if r != nil && r.Status != j.Status {
		// The store's results.json says what the record says (a runner
		// stopped for its timeout wrote cancelled, one that died wrote
		// running); out/ keeps the runner's own copy.
		r.Status, r.Success = j.Status, j.Status == result.StatusSucceeded
		if r.Error == "" {
			r.Error = j.Error
		}
		if err := result.WriteFile(resPath, r); err != nil {
			return fmt.Errorf("record the status of job %s in its results: %w", j.ID, err)
		}
	}
	return fetchErr
}

func oomMessage(limit int64) string {
	if limit <= 0 {
		return "container was OOM-killed (no memory limit: the host ran out of memory)"
	}
	return fmt.Sprintf("container was OOM-killed (memory limit %s)", units.BytesSize(float64(limit)))
}

// fetchOutputs copies /xrun/out (results.json among it) and the logs of
// the job's container into its store directory.
func (a *App) fetchOutputs(ctx context.Context, e engine.Engine, j *jobs.Job) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	var logs bytes.Buffer
	if err := e.Logs(ctx, j.ContainerID, engine.LogOptions{}, &logs, &logs); err != nil {
		return err
	}
	if err := st.WriteFile(j.ID, jobs.LogsFile, logs.Bytes()); err != nil {
		return err
	}
	return a.fetchResults(ctx, e, j)
}

// fetchResults copies /xrun/out from the container (running or not) into
// the job's store directory, and results.json beside the record.
func (a *App) fetchResults(ctx context.Context, e engine.Engine, j *jobs.Job) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	rc, err := e.CopyFrom(ctx, j.ContainerID, contract.OutDir)
	if err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			return nil // the runner never wrote anything
		}
		return err
	}
	defer rc.Close()
	dir := filepath.Join(st.Dir(j.ID), jobs.OutDir)
	if err := extractTar(rc, dir); err != nil {
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

// extractTar writes the regular files and directories of a tar made by the
// daemon ("out/...") under dir, dropping the first path element. Entries
// that would land outside dir are refused.
func extractTar(r io.Reader, dir string) error {
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
	if j.OOMKilled {
		msg += "; raise resources.memory in xrun.yaml"
	}
	return &ExitError{Code: code, Err: fmt.Errorf("%s (see `xrun logs %s`)", msg, j.ID)}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
