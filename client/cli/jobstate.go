package cli

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

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/runner/result"
)

// Container labels. The job label finds a job's container on any host;
// the timeout label lets `xrun wait` and `xrun status` enforce the timeout
// of a detached job after the submitting client has gone.
const (
	LabelJob           = "dev.xrun.job"
	LabelExperiment    = "dev.xrun.experiment"
	LabelSpecHash      = "dev.xrun.spec-hash"
	LabelGPUs          = "dev.xrun.gpus"
	LabelClientVersion = "dev.xrun.client-version"
	LabelImage         = "dev.xrun.image"
	LabelMode          = "dev.xrun.mode"
	LabelTimeout       = "dev.xrun.timeout"
	// LabelBaseID (on job images) is the id of the base image they were built on.
	LabelBaseID = "dev.xrun.base-id"
)

// OutPath is the runner's output directory inside the container.
const OutPath = "/xrun/out"

// stopGrace is how long the runner gets to write cancelled results after
// SIGTERM before the daemon kills it.
const stopGrace = 10 * time.Second

// finalStatus reports whether a job status will not change any more.
func finalStatus(s string) bool {
	switch s {
	case result.StatusSucceeded, result.StatusFailed, result.StatusCriteriaFailed,
		result.StatusCancelled, result.StatusTimeout, jobs.StatusOOM:
		return true
	}
	return false
}

// statusFromExit maps the runner's exit code (docs/architecture.md) to a
// job status; an OOM kill wins over the code the kill produced.
func statusFromExit(code int, oom bool) string {
	switch {
	case oom:
		return jobs.StatusOOM
	case code == 0:
		return result.StatusSucceeded
	case code == 1:
		return result.StatusCriteriaFailed
	case code == 130 || code == 143: // SIGINT, SIGTERM: the runner wrote cancelled results
		return result.StatusCancelled
	}
	return result.StatusFailed
}

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
	s := c.Labels[LabelTimeout]
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
	j.Status = result.StatusTimeout
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
	switch {
	case j.Status == result.StatusTimeout || j.Status == result.StatusCancelled:
		// set by the client that stopped it: keep
	case c.OOMKilled:
		j.Status = jobs.StatusOOM
		j.Error = oomMessage(c.MemoryBytes)
	default:
		j.Status = statusFromExit(code, false)
		if r, err := result.ReadFile(filepath.Join(st.Dir(j.ID), jobs.ResultsFile)); err == nil {
			if r.Status != "" && r.Status != result.StatusRunning && code != 0 {
				j.Status = r.Status
			}
			if r.Error != "" {
				j.Error = r.Error
			} else if j.Status == result.StatusFailed {
				j.Error = failureSentence(r)
			}
		}
	}
	if err := st.Save(j); err != nil {
		return err
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
	rc, err := e.CopyFrom(ctx, j.ContainerID, OutPath)
	if err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			return nil // the runner never wrote anything
		}
		return err
	}
	defer rc.Close()
	dir := filepath.Join(st.Dir(j.ID), jobs.OutDir)
	if err := extractTar(rc, dir); err != nil {
		return fmt.Errorf("copy %s of job %s: %w", OutPath, j.ID, err)
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
// says what happened, carrying the exit code xrun exits with.
func jobOutcome(j *jobs.Job) error {
	code := ExitFailure
	if j.ExitCode != nil && *j.ExitCode != 0 {
		code = *j.ExitCode
	}
	switch j.Status {
	case result.StatusSucceeded:
		return nil
	case result.StatusCriteriaFailed:
		return &ExitError{Code: 1, Err: fmt.Errorf("job %s ran, but its criteria failed (see the results above or `xrun results %s`)", j.ID, j.ID)}
	case result.StatusTimeout:
		return &ExitError{Code: ExitTimeout, Err: fmt.Errorf("job %s timed out after %s: raise resources.timeout in xrun.yaml or pass --timeout", j.ID, j.Timeout)}
	case jobs.StatusOOM:
		return &ExitError{Code: code, Err: fmt.Errorf("job %s: %s; raise resources.memory in xrun.yaml", j.ID, j.Error)}
	case result.StatusCancelled:
		return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("job %s was cancelled", j.ID)}
	case jobs.StatusRemoved:
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("job %s: %s", j.ID, j.Error)}
	}
	msg := fmt.Sprintf("job %s failed", j.ID)
	if j.ExitCode != nil {
		msg += fmt.Sprintf(" with exit code %d", *j.ExitCode)
	}
	if j.Error != "" {
		msg += ": " + firstLine(j.Error)
	}
	return &ExitError{Code: code, Err: fmt.Errorf("%s (see `xrun logs %s`)", msg, j.ID)}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
