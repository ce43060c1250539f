package job

import (
	"context"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/jobs"
)

// LocalRequest is a run of the runner on this machine without a
// container (xrun run --local): a job of Backend (client/backend/local)
// that needs no image, followed to its end as an attached submit is.
type LocalRequest struct {
	Backend backend.Backend
	// Record is the job's record before it is created: its experiment,
	// directory, spec hash, mode and GPUs. The rest is filled in here.
	Record *jobs.Job
	// Spec is what Backend runs, made once the job has its id.
	Spec func(j *jobs.Job) backend.Spec
}

// RunLocal records the job, makes and starts it and follows it to its end
// (Attach), with the same cleanup as Submit for one that fails or is
// interrupted on the way. Once its results and logs are in the store, its
// directory on the backend is removed. It returns the job as far as it
// got and an error for a run that failed or was interrupted, not for the
// job's own outcome (Outcome says that).
func (m *Manager) RunLocal(ctx context.Context, r LocalRequest) (*jobs.Job, error) {
	s := &submission{m: m, b: r.Backend, release: func() {}}
	j, err := s.runLocal(ctx, r)
	if err != nil {
		return j, s.abort(ctx, err)
	}
	return j, nil
}

func (s *submission) runLocal(ctx context.Context, r LocalRequest) (*jobs.Job, error) {
	j := r.Record
	j.Host, j.Status = s.b.Where(), jobs.StatusCreated
	j.Creator, j.Owner = jobs.Creator(), jobs.CurrentUser()
	if err := s.m.Store.Create(j); err != nil {
		return nil, err
	}
	s.j, s.stage = j, recorded
	if s.m.OnJob != nil {
		s.m.OnJob(j)
	}
	return s.launch(ctx, r.Spec(j))
}
