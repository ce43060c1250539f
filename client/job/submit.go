package job

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/build"
	"github.com/xrun-dev/xrun/client/buildctx"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

// SubmitRequest is a submit the command line has validated: the loaded
// experiment, where it runs, and how.
type SubmitRequest struct {
	// Prepared is the loaded spec (build.Load) and Build what to build.
	Prepared *build.Prepared
	Build    build.Options
	// Where picks the Docker host (and with K8s the cluster; the image is
	// then built on the Docker host and pushed to Registry).
	Where      connect.Selection
	Registry   string
	PullSecret string
	// PendingLimit is how long a cluster's job with a timeout may wait
	// for a node (Where.Cluster).
	PendingLimit time.Duration
	// Job is how the container runs (environment, root, network, token).
	Job build.JobOptions
	// Detach returns once the job runs; otherwise the job is followed
	// to its end (Attach).
	Detach bool
	// Queue waits for GPUs other jobs hold instead of failing.
	Queue bool
	// Keep leaves an attached job's exited container on the host; else it
	// is removed once the job's results and logs are in the store.
	Keep bool
	// Rerun is recorded with the job, for xrun regress --confirm.
	Rerun *store.SubmitArgs
	// NoCacheVolume leaves the compile caches in the job's own container
	// (CacheVolume).
	NoCacheVolume bool
	// NoStandby neither claims a Docker host's standby container for the
	// job nor leaves one for the next submit (backend.Standbys).
	NoStandby bool
	// Split runs one part of the sweep split over several jobs ("2/4",
	// contract.EnvSplit) whose results are gathered into job SplitOf.
	Split, SplitOf string
}

// stage is how far a submit got: it decides what a failure or a Ctrl-C
// leaves to undo.
type stage int

const (
	unrecorded stage = iota // nothing recorded, nothing made
	recorded                // a record (and maybe GPUs), no container yet
	created                 // a container or Kubernetes Job, not started
	started                 // running
)

// submission is one submit on its way.
type submission struct {
	m     *Manager
	r     SubmitRequest
	b     backend.Backend
	j     *store.Job
	stage stage
	// release frees the GPUs the job holds (a no-op without any).
	release func()
	// standby is the standby container the submit claimed, until the job
	// is handed to it or it is discarded; next is the spec of a job with
	// id on the same host and settings, for the standby an attached job
	// leaves behind (nil: none).
	standby backend.Standby
	next    func(id string) backend.Spec
	made    chan error // the standby being made (leaveStandby)
	// forgotten says the record was removed: the place refused the job
	// before anything was submitted (backend.RefusedError, or a request
	// its backend cannot write, as a bad scheduler option).
	forgotten bool
}

// Submit builds the job's image, records the job, reserves its GPUs,
// makes and starts the job, and, unless r.Detach, follows it to its end
// (Attach). It returns the job as far as it got (nil before it was
// recorded) and an error for a submit that failed or was interrupted, not
// for the job's own outcome (Outcome says that).
func (m *Manager) Submit(ctx context.Context, r SubmitRequest) (*store.Job, error) {
	s := &submission{m: m, r: r, release: func() {}}
	j, err := s.run(ctx)
	if err != nil {
		err = refusedIsBadInput(s.abort(ctx, err))
		if s.forgotten {
			j = nil
		}
		return j, err
	}
	return j, nil
}

// refusedIsBadInput gives a cluster's refusal of what it can never run
// (backend.RefusedError) the exit code of a bad request (3).
func refusedIsBadInput(err error) error {
	var refused *backend.RefusedError
	if errors.As(err, &refused) {
		return contract.BadInput(fmt.Errorf("%w (nothing was submitted)", err))
	}
	return err
}

// badRequest says err is a request the backend refused to write (exit 3).
func badRequest(err error) bool {
	var ee *contract.ExitError
	return errors.As(err, &ee) && ee.Code == contract.ExitUsage
}

func (s *submission) run(ctx context.Context) (*store.Job, error) {
	m, r, p := s.m, s.r, s.r.Prepared
	done := m.step("connect")
	// A cluster's job image is built on the Docker host (--host, default
	// the local one) and pushed to the cluster's registry; a place that
	// runs the runner without an image gets the static runner instead.
	t, err := m.Backends.Target(ctx, r.Where)
	if err != nil {
		return nil, err
	}
	e := t.Builder
	done()
	runnerFor := m.RunnerFor
	if runnerFor == nil {
		runnerFor = build.RunnerBinary
	}
	var runner string
	if e != nil {
		builder := &build.Builder{Engine: e, Log: m.Err, TTY: m.ErrTTY, RunnerFor: runnerFor, Step: m.step, ProbeGPUs: t.OnBuilder}
		if err := builder.Build(ctx, p, r.Build); err != nil {
			return nil, err
		}
	} else {
		if runner, err = runnerFor(ctx, "linux", t.RunnerArch, func(f string, args ...any) { fmt.Fprintf(m.Err, f+"\n", args...) }); err != nil {
			return nil, err
		}
		if p.Code == nil {
			if p.Code, err = buildctx.Collect(r.Build.Dir, p.Spec, nil); err != nil {
				return nil, contract.BadInput(err)
			}
		}
	}
	s.b = t.Backend
	jo := r.Job
	if t.OnBuilder {
		jo.HostMemory = p.Info.MemoryBytes
	}
	s.j = newRecord(p, s.b.Where(), r.Build.Dir)
	s.j.Submit = r.Rerun
	if r.Split != "" {
		s.j.Split, s.j.SplitOf = r.Split, r.SplitOf
		jo.Env = append(slices.Clip(jo.Env), contract.EnvSplit+"="+r.Split)
	}
	standbys, warm := s.b.(backend.Standbys)
	warm = warm && !r.NoStandby
	if warm {
		// The job takes the id its standby was made for.
		if st, ok := standbys.Claim(ctx, p.Spec.Name, s.j.Owner); ok {
			s.standby, s.j.ID = st, st.ID()
		}
	}
	if err := m.Store.Create(s.j); err != nil {
		return nil, err
	}
	if s.standby != nil && s.j.ID != s.standby.ID() {
		s.dropStandby() // the store has that id already
	}
	s.stage = recorded
	if len(p.BuildLog) > 0 {
		if err := m.Store.WriteFile(s.j.ID, build.BuildLogFile, p.BuildLog); err != nil {
			fmt.Fprintf(m.Err, "warning: keep the build log: %v\n", err)
		}
	}
	if m.OnJob != nil {
		m.OnJob(s.j)
	}
	res := backend.NoReservation(p.GPUs)
	if pr, ok := s.b.(backend.Preparer); ok {
		if res, err = pr.Prepare(ctx, backend.PrepareRequest{Job: s.j, Image: p.ImageRef, GPUs: p.GPUs,
			GPUType: p.Spec.Resources.GPUType, CPUs: p.Spec.Resources.CPUs, Queue: r.Queue, Log: m.Err}); err != nil {
			return s.j, err
		}
	}
	s.release = res.Release
	if res.GPUs != nil {
		// The devices the host assigned, in place of the request.
		p.GPUs, p.GPUIDs = res.GPUs, res.GPUIDs
	}
	gpuModel := res.GPUModel
	if !r.NoCacheVolume && e != nil {
		jo.CacheVolume, jo.CacheLabels = cacheVolume(ctx, e, p, gpuModel, s.j.Owner, jo.Root)
	}
	if p.GPUIDs != "" {
		s.j.GPUs = p.GPUIDs
	}
	jo.CPUSet, s.j.CPUs = res.CPUSet, res.CPUSet
	if warm && !r.Detach {
		owner := s.j.Owner
		s.next = func(id string) backend.Spec {
			next := p.JobSpec(ctx, &store.Job{ID: id, Owner: owner}, r.Build.Dir, jo)
			// The standby has no code until its job comes: what its zygote
			// imports beyond numpy, torch and triton is said here.
			if spec.UsesTorchCompile(r.Build.Dir, p.Spec.Include) {
				next.Env = append(next.Env, contract.EnvZygotePreload+"="+strings.Join(spec.CompileStack, ","))
			}
			return next
		}
	}
	if e == nil {
		// Without an image, the runner and every process it starts are
		// the user's own.
		jo.Root = true
	}
	spec := p.JobSpec(ctx, s.j, r.Build.Dir, jo)
	spec.WaitForNode, spec.PendingLimit = r.Queue, r.PendingLimit
	switch {
	case e == nil:
		spec.Image, spec.Runner = "", runner
		spec.Env = append(spec.Env, contract.EnvOwnTree+"=1")
	case !t.OnBuilder:
		spec.Push = &backend.Push{Builder: e, Registry: r.Registry, PullSecret: r.PullSecret}
	}
	return s.launch(ctx, spec)
}

// dropStandby removes the standby the submit claimed and did not use.
func (s *submission) dropStandby() {
	if s.standby == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), backend.CleanupTimeout)
	defer cancel()
	s.standby.Discard(ctx)
	s.standby = nil
}

// start makes and starts the job's container, or hands the job to the
// standby the submit claimed when that was made for the same settings.
func (s *submission) start(ctx context.Context, spec backend.Spec) error {
	m := s.m
	if st := s.standby; st != nil {
		s.standby = nil
		done := m.step("hand to the standby")
		err := st.Hand(ctx, s.j, spec)
		done()
		if !errors.Is(err, backend.ErrStandbyMismatch) {
			return err
		}
	}
	done := m.step("create")
	err := s.b.Create(ctx, s.j, spec)
	done()
	if err != nil {
		return err
	}
	s.stage = created
	if err := m.Store.Save(s.j); err != nil {
		return err
	}
	done = m.step("start")
	defer done()
	return s.b.Start(ctx, s.j)
}

// leaveStandby starts making the standby of the next submit (s.next),
// once the job has ended: it overlaps the fetch of the job's results.
// waitStandby waits for it; a standby that cannot be made is a note, not
// the job's failure.
func (s *submission) leaveStandby() {
	if s.next == nil || s.made != nil {
		return
	}
	s.made = make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), backend.CreateTimeout)
		defer cancel()
		done := s.m.step("leave standby")
		defer done()
		s.made <- s.b.(backend.Standbys).Leave(ctx, s.next(store.NewID()))
	}()
}

func (s *submission) waitStandby() {
	if s.made == nil {
		return
	}
	if err := <-s.made; err != nil {
		fmt.Fprintf(s.m.Err, "note: %v; the next submit starts cold\n", err)
	}
}

// launch makes and starts the recorded job from spec on s.b and, unless
// s.r.Detach, follows it to its end (Attach) and removes what is left of
// it once its end is stored (unless s.r.Keep).
func (s *submission) launch(ctx context.Context, spec backend.Spec) (*store.Job, error) {
	m, r := s.m, s.r
	if err := s.start(ctx, spec); err != nil {
		return s.j, err
	}
	s.stage = started
	s.j.Status = store.StatusRunning
	if r.Detach {
		return s.j, m.Store.Save(s.j)
	}
	m.Store.Save(s.j)
	if err := m.attach(ctx, s.b, s.j, s.leaveStandby); err != nil {
		s.waitStandby()
		if !errors.Is(err, ErrDetached) {
			// A job left detached keeps its GPUs, as one of submit -d.
			s.release()
		}
		return s.j, err
	}
	s.release()
	if !r.Keep {
		done := m.step("remove")
		m.removeStored(s.b, s.j)
		done()
	}
	s.waitStandby()
	return s.j, nil
}

// removeStored removes the exited container of job j, as docker run --rm
// does, but only once the store holds the job's end: its final status,
// and its results and logs where the job wrote any (a job no node took
// wrote none: its Failed Kubernetes Job or Slurm directory goes too). A
// failed removal is a warning: the job's outcome stands.
func (m *Manager) removeStored(b backend.Backend, j *store.Job) {
	if !store.Final(j.Status) || j.Finished == nil || j.ContainerID == "" {
		return
	}
	if !m.Store.Has(j.ID, store.LogsFile) && !strings.HasPrefix(j.Error, NoNodePrefix) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), backend.CleanupTimeout)
	defer cancel()
	if err := b.Remove(ctx, j, false); err != nil && !errors.Is(err, backend.ErrNotFound) {
		fmt.Fprintf(m.Err, "warning: job %s: its container is left on %s: %v (xrun rm %s removes it)\n", j.ID, b.Where(), err, j.ID)
	}
}

// abort undoes what a submit that failed with err, or was interrupted
// (ctx ended), made at its stage, records why, and returns the error xrun
// exits with. The GPUs it held are freed.
func (s *submission) abort(ctx context.Context, err error) error {
	if s.stage == started {
		return err // Attach has stopped and recorded the job already
	}
	defer s.release()
	s.dropStandby()
	var refused *backend.RefusedError
	switch {
	case s.stage == unrecorded:
		return interruptedBeforeJob(ctx, err)
	case errors.As(err, &refused) || (s.stage == recorded && badRequest(err)):
		// Nothing was submitted: no record of a job that never was.
		s.m.discard(s.b, s.j, err)
		if rerr := s.m.Store.Remove(s.j.ID); rerr == nil {
			s.forgotten = true
		}
		return err
	case ctx.Err() != nil:
		// The error is the cancelled request's; the backend removed what
		// its create made, and discard removes it again when the record
		// knows it.
		s.j.StoppedBy = result.StatusCancelled
		s.m.discard(s.b, s.j, errors.New("interrupted before it started"))
		return &contract.ExitError{Code: contract.ExitCancelled, Err: fmt.Errorf("job %s interrupted before it started", s.j.ID)}
	}
	s.m.discard(s.b, s.j, err)
	return err
}

// discard removes a job that could not start and records why.
func (m *Manager) discard(b backend.Backend, j *store.Job, cause error) {
	ctx, cancel := context.WithTimeout(context.Background(), backend.CleanupTimeout)
	defer cancel()
	if j.ContainerID != "" && b != nil {
		b.Remove(ctx, j, true)
	}
	now := time.Now().UTC()
	j.Status, j.Error, j.Finished = result.StatusFailed, cause.Error(), &now
	if j.StoppedBy != "" {
		j.Status = j.StoppedBy
	}
	m.Store.Save(j)
}

// interruptedBeforeJob is err, or, when Ctrl-C ended ctx, the error of a
// submit interrupted before it recorded a job (nothing to clean up): the
// cancelled request's own error says nothing useful. Errors that carry
// their exit code already (an interrupted build or pull) stay.
func interruptedBeforeJob(ctx context.Context, err error) error {
	var ee *contract.ExitError
	if ctx.Err() == nil || errors.As(err, &ee) {
		return err
	}
	return &contract.ExitError{Code: contract.ExitCancelled, Err: errors.New("interrupted before the job was created")}
}

// newRecord is the record of a job about to be created from p on where.
func newRecord(p *build.Prepared, where, dir string) *store.Job {
	j := &store.Job{
		Host:       where,
		Experiment: p.Spec.Name,
		ImageRef:   p.ImageRef,
		ImageID:    p.ImageID,
		SpecHash:   p.Spec.Hash,
		GPUs:       p.GPULabel,
		Mode:       p.Mode,
		Status:     store.StatusCreated,
		Creator:    store.Creator(),
		Owner:      store.CurrentUser(),
	}
	if abs, err := filepath.Abs(dir); err == nil {
		j.ExperimentDir = abs
	}
	if p.Timeout > 0 {
		j.Timeout = p.Timeout.String()
	}
	return j
}

// Handle names what runs job j on b: what its backend.Handler says
// ("Job NAME" on a cluster, "Slurm job 31"), else "container NAME".
func Handle(b backend.Backend, j *store.Job) string {
	if h, ok := b.(backend.Handler); ok {
		return h.Handle(j)
	}
	return "container " + j.ContainerName
}
