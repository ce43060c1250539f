package job

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/build"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

// LocalRequest is a run of the runner on this machine without a
// container (xrun run --local): a job of Backend (client/backend/local)
// that needs no image, followed to its end as an attached submit is.
type LocalRequest struct {
	Backend backend.Backend
	// Record is the job's record before it is created: its experiment,
	// directory, spec hash, mode and GPUs. The rest is filled in here.
	Record *store.Job
	// Spec is what Backend runs, made once the job has its id.
	Spec func(j *store.Job) backend.Spec
}

// LocalArgs are a run of the runner on this machine as `xrun run --local`
// asks for it.
type LocalArgs struct {
	// Dir is the experiment directory; Out the output directory ("":
	// Dir/.xrun/out).
	Dir, Out string
	// CPU runs the CPU sweep even where a GPU is; else the runner picks.
	CPU bool
	// Python is the harness's interpreter ("": the runner picks).
	Python string
}

// Local checks a, makes its output directory and returns the request for
// RunLocal, and the output directory: a job of the local backend whose
// runner is this xrun binary (client/backend/local).
func (m *Manager) Local(a LocalArgs) (LocalRequest, string, error) {
	s, err := spec.Load(a.Dir)
	if err != nil {
		return LocalRequest{}, "", contract.BadInput(err)
	}
	out := a.Out
	if out == "" {
		out = filepath.Join(a.Dir, ".xrun", "out")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return LocalRequest{}, "", fmt.Errorf("make output directory: %w", err)
	}
	dir, err := filepath.Abs(a.Dir)
	if err != nil {
		return LocalRequest{}, "", err
	}
	absOut, err := outDir(out)
	if err != nil {
		return LocalRequest{}, "", err
	}
	exe, err := os.Executable()
	if err != nil {
		return LocalRequest{}, "", fmt.Errorf("find the xrun binary to run the runner: %w", err)
	}
	b, err := m.Backends.Local()
	if err != nil {
		return LocalRequest{}, "", &contract.ExitError{Code: contract.ExitInfra, Err: err}
	}
	// The runner picks GPU or CPU where no --cpu says.
	rec := &store.Job{Experiment: s.Name, ExperimentDir: dir, SpecHash: s.Hash, Mode: "auto", GPUs: "-"}
	if a.CPU {
		rec.Mode, rec.GPUs = "cpu", "0"
	}
	if t := s.Resources.Timeout.Duration; t > 0 {
		rec.Timeout = t.String()
	}
	return LocalRequest{Backend: b, Record: rec, Spec: func(j *store.Job) backend.Spec {
		argv := b.Command(exe, dir, absOut, a.CPU, a.Python, j.ID)
		return backend.Spec{Name: build.JobName(s.Name, j.ID), Command: argv, OutDir: absOut}
	}}, out, nil
}

// outDir is a local job's output directory, absolute and with its links
// resolved (a --out that is a link to another disk is where the runner
// writes, and where its results are copied from). A link inside it is
// refused: the runner writes its files there by name and would write
// through it, wherever it points.
func outDir(out string) (string, error) {
	abs, err := filepath.Abs(out)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", fmt.Errorf("output directory %s: %w", out, err)
	}
	err = filepath.WalkDir(abs, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return contract.BadInput(fmt.Errorf("the output directory holds a symbolic link, %s: xrun writes there and would write through it; remove it or choose another --out", path))
		}
		return nil
	})
	if err != nil {
		var ee *contract.ExitError
		if errors.As(err, &ee) {
			return "", err
		}
		return "", fmt.Errorf("read output directory %s: %w", out, err)
	}
	return abs, nil
}

// LocalOutcome is a local job's outcome err (Outcome, OutcomeShown) with
// the exit code the runner gives it (run.ExitCode): a run past
// resources.timeout, which the runner stops itself, is a failure (2)
// there.
func LocalOutcome(j *store.Job, err error) error {
	if j.Status == result.StatusTimeout && j.StoppedBy == "" {
		return &contract.ExitError{Code: contract.ExitFailed, Err: fmt.Errorf("job %s ran past resources.timeout (%s): raise it in %s (see the results above or `xrun results %s`)", j.ID, j.Timeout, spec.FileName, j.ID)}
	}
	return err
}

// RunLocal records the job, makes and starts it and follows it to its end
// (Attach), with the same cleanup as Submit for one that fails or is
// interrupted on the way. Once its results and logs are in the store, its
// directory on the backend is removed. It returns the job as far as it
// got and an error for a run that failed or was interrupted, not for the
// job's own outcome (Outcome says that).
func (m *Manager) RunLocal(ctx context.Context, r LocalRequest) (*store.Job, error) {
	s := &submission{m: m, b: r.Backend, release: func() {}}
	j, err := s.runLocal(ctx, r.Record, r.Spec)
	if err != nil {
		err = s.abort(ctx, err)
		if s.forgotten {
			j = nil
		}
		return j, err
	}
	return j, nil
}

func (s *submission) runLocal(ctx context.Context, j *store.Job, spec func(*store.Job) backend.Spec) (*store.Job, error) {
	j.Host, j.Status = s.b.Where(), store.StatusCreated
	j.Creator, j.Owner = store.Creator(), store.CurrentUser()
	if err := s.m.Store.Create(j); err != nil {
		return nil, err
	}
	s.j, s.stage = j, recorded
	if s.m.OnJob != nil {
		s.m.OnJob(j)
	}
	return s.launch(ctx, spec(j))
}

// RanLocally reports whether j ran without a container (xrun run --local).
func RanLocally(j *store.Job) bool { return connect.IsLocal(j.Host) }

// RerunLocal runs j, a job of xrun run --local, again as it ran: on this
// machine, in its mode, into an output directory of its own that is
// removed afterwards (the rerun's results and logs are in the store). The
// error is the rerun's outcome as LocalOutcome gives it.
func (m *Manager) RerunLocal(ctx context.Context, j *store.Job) (*store.Job, error) {
	b, err := m.Backends.Local()
	if err != nil {
		return nil, &contract.ExitError{Code: contract.ExitInfra, Err: err}
	}
	if this := b.Where(); j.Host != this {
		return nil, fmt.Errorf("job %s ran without a container on %s, not on this machine (%s): run the rerun there", j.ID, j.Host, this)
	}
	out, err := os.MkdirTemp("", "xrun-rerun-")
	if err != nil {
		return nil, fmt.Errorf("make the rerun's output directory: %w", err)
	}
	defer os.RemoveAll(out)
	req, _, err := m.Local(LocalArgs{Dir: j.ExperimentDir, Out: out, CPU: j.Mode == "cpu"})
	if err != nil {
		return nil, err
	}
	rerun, err := m.RunLocal(ctx, req)
	if rerun != nil {
		err = LocalOutcome(rerun, err)
	}
	return rerun, err
}
