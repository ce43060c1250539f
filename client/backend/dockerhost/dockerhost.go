// Package dockerhost runs jobs as containers on a Docker host: the
// backend.Backend of client/engine. The code goes into the created
// container with a copy, so that a code edit costs no image build.
package dockerhost

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/docker/go-units"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

// Capabilities is what a Docker host gives: every feature a submit may ask
// for (GPUs by id, no network, reserved CPUs, root, a base image).
var Capabilities = backend.Capabilities{Name: "a Docker host", StoppedBy: "docker stop, a Docker daemon restart, a host shutdown"}

// Backend is a Docker host.
type Backend struct {
	Engine engine.Engine
	// FakeGPUs is the test inventory of a named host of xrun's config
	// (gpus: N; docs/hosts.md), 0 for none; Getenv reads the environment
	// (XRUN_FAKE_GPUS, the inventory's cache; nil: the process's).
	FakeGPUs int
	Getenv   func(string) string
}

var _ backend.Backend = (*Backend)(nil)

// New returns the backend of engine e.
func New(e engine.Engine) *Backend { return &Backend{Engine: e} }

func (b *Backend) Where() string { return b.Engine.Host() }

// ContainerSpec is the container a job spec becomes.
func ContainerSpec(s backend.Spec) engine.ContainerSpec {
	cs := engine.ContainerSpec{
		Name:        s.Name,
		Image:       s.Image,
		Env:         append(slices.Clone(s.Env), s.WhereEnv(s.Image, s.HostName, s.CacheVolume)...),
		Labels:      s.Labels,
		ShmBytes:    s.ShmBytes,
		MemoryBytes: s.MemoryBytes,
		PidsLimit:   s.PidsLimit,
		CPUSet:      s.CPUSet,
		// The runner starts as root with the capabilities to run the
		// experiment's code as contract.JobUser and kill its processes,
		// and no others; that user owns /xrun/{home,tmp} alone
		// (runner/sandbox).
		User:            "0:0",
		Unprivileged:    true,
		CapAdd:          contract.RunnerCaps,
		NetworkDisabled: s.NoNetwork,
	}
	if s.Root {
		cs.User, cs.Unprivileged, cs.CapAdd = "", false, s.CapAdd
	}
	if s.GPUs != nil {
		cs.GPUs = &engine.GPURequest{Count: s.GPUs.Count, IDs: s.GPUs.IDs}
	}
	if s.CacheVolume != "" {
		cs.Mounts = []engine.Mount{{Volume: s.CacheVolume, Target: contract.CacheDir, Labels: s.CacheLabels}}
	}
	return cs
}

// Create makes the container and copies the code into it. Nothing is left
// behind when it fails or ctx ends on the way: a container whose copy
// failed is removed again, and so is one the create made after all.
func (b *Backend) Create(ctx context.Context, j *store.Job, s backend.Spec) error {
	j.ContainerName = s.Name
	if err := ctx.Err(); err != nil {
		return err
	}
	// The create request is not cancelled with ctx: a request cut off
	// once it reached the daemon can still make the container, and the
	// client would never learn its id. Let it finish, then remove the
	// container when ctx ended meanwhile.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backend.CreateTimeout)
	id, err := b.Engine.Create(cctx, ContainerSpec(s))
	cancel()
	if err != nil {
		// A create that timed out or lost its connection may have made
		// the container all the same: look for it by the job's label.
		b.removeLeft(ctx, j.ID)
		return err
	}
	if err := ctx.Err(); err != nil {
		b.remove(ctx, id)
		return err
	}
	if err := b.settle(ctx, j.ID, id, s); err != nil {
		b.remove(ctx, id)
		return err
	}
	j.ContainerID = id
	return b.copyIn(ctx, id, s, nil)
}

// copyIn copies the POST token and the code of s into container id in one
// copy, and last goJSON as contract.StandbyGoFile when it is set (a
// standby's job, standby.go); it removes the container when that fails.
func (b *Backend) copyIn(ctx context.Context, id string, s backend.Spec, goJSON []byte) error {
	if s.PostToken == "" && s.Code == nil && goJSON == nil {
		return nil
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(inTar(pw, s, goJSON)) }()
	err := b.Engine.CopyTo(ctx, id, "/xrun", pr)
	pr.Close()
	if err == nil {
		return nil
	}
	b.remove(ctx, id)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var what []string
	if s.PostToken != "" {
		what = append(what, "the POST token")
	}
	if s.Code != nil {
		what = append(what, fmt.Sprintf("the experiment's code (%d files, %s)", len(s.Code.Files), units.HumanSize(float64(s.Code.Bytes))))
	}
	if goJSON != nil {
		what = append(what, "the job")
	}
	return fmt.Errorf("copy %s into the job's container: %w", strings.Join(what, " and "), err)
}

// inTar writes what copyIn copies, a tar unpacked at /xrun in order: the
// POST token, the code, the go file.
func inTar(w io.Writer, s backend.Spec, goJSON []byte) error {
	tw := tar.NewWriter(w)
	secret := func(path string, data []byte) error { return backend.WriteSecret(tw, path, data) }
	if s.PostToken != "" {
		if err := secret(contract.PostTokenFile, []byte(s.PostToken)); err != nil {
			return err
		}
	}
	if s.Code != nil {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(s.Code.WriteCode(pw)) }()
		tr := tar.NewReader(pr)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err == nil {
				err = tw.WriteHeader(h)
			}
			if err == nil {
				_, err = io.Copy(tw, tr)
			}
			if err != nil {
				pr.CloseWithError(err)
				return err
			}
		}
	}
	if goJSON != nil {
		if err := secret(contract.StandbyGoFile, goJSON); err != nil {
			return err
		}
	}
	return tw.Close()
}

// remove force-removes container id, also once ctx is done.
func (b *Backend) remove(ctx context.Context, id string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backend.CleanupTimeout)
	defer cancel()
	b.Engine.Remove(rctx, id, true)
}

// removeLeft force-removes the containers labelled as job id's, also
// once ctx is done.
func (b *Backend) removeLeft(ctx context.Context, job string) {
	if job == "" {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backend.CleanupTimeout)
	defer cancel()
	cs, err := b.Engine.List(rctx, map[string]string{contract.LabelJob: job}, true)
	if err != nil {
		return
	}
	for _, c := range cs {
		b.Engine.Remove(rctx, c.ID, true)
	}
}

func (b *Backend) Start(ctx context.Context, j *store.Job) error {
	return notFound(b.Engine.Start(ctx, j.ContainerID))
}

func (b *Backend) State(ctx context.Context, j *store.Job) (backend.State, error) {
	c, err := b.Engine.Inspect(ctx, j.ContainerID)
	if err != nil {
		return backend.State{}, notFound(err)
	}
	s := StateOf(c)
	if c.Labels[LabelStandby] != "" {
		// The container started before its job (a standby): the job's
		// time runs from when it was handed over, which only the
		// submitting client's record knows. Without it the runner's own
		// timeout is the job's.
		s.StartedAt = time.Time{}
		if j.Started != nil {
			s.StartedAt = *j.Started
		}
	}
	return s, nil
}

// Wait waits for a started (or exited) container to stop.
func (b *Backend) Wait(ctx context.Context, j *store.Job) (backend.State, error) {
	res := <-b.Engine.Wait(ctx, j.ContainerID, false)
	if res.Err != nil {
		if ctx.Err() != nil {
			return backend.State{}, ctx.Err()
		}
		return backend.State{}, notFound(res.Err)
	}
	return b.State(ctx, j)
}

func (b *Backend) Logs(ctx context.Context, j *store.Job, o backend.LogOptions, stdout, stderr io.Writer) error {
	tail := o.Tail
	if tail == "" {
		tail = "all"
	}
	return notFound(b.Engine.Logs(ctx, j.ContainerID, engine.LogOptions{Follow: o.Follow, Tail: tail, Timestamps: o.Timestamps}, stdout, stderr))
}

func (b *Backend) CopyOut(ctx context.Context, j *store.Job) (io.ReadCloser, error) {
	rc, err := b.Engine.CopyFrom(ctx, j.ContainerID, contract.OutDir)
	if errors.Is(err, engine.ErrNotFound) {
		return nil, fmt.Errorf("its runner wrote no output (%s) in its container: %w", contract.OutDir, backend.ErrNotFound)
	}
	return rc, notFound(err)
}

func (b *Backend) Stop(ctx context.Context, j *store.Job, grace time.Duration) error {
	return notFound(b.Engine.Stop(ctx, j.ContainerID, grace))
}

func (b *Backend) Remove(ctx context.Context, j *store.Job, force bool) error {
	if !force {
		// Refused in the backends' one sentence, not the daemon's.
		s, err := b.State(ctx, j)
		if err != nil {
			return err
		}
		if !s.Finished() && s.Phase == backend.Running {
			return &backend.RunningError{JobID: j.ID, State: s.Detail}
		}
	}
	return notFound(b.Engine.Remove(ctx, j.ContainerID, force))
}

// List returns the job containers on the host.
func (b *Backend) List(ctx context.Context, all bool) ([]backend.Listed, error) {
	cs, err := b.Engine.List(ctx, map[string]string{contract.LabelJob: ""}, all)
	if err != nil {
		return nil, err
	}
	var out []backend.Listed
	for _, c := range cs {
		if c.Labels[contract.LabelJob] == contract.ProbeJob || idle(c) {
			continue
		}
		out = append(out, backend.Listed{Job: b.jobOf(c), State: StateOf(c)})
	}
	return out, nil
}

// jobOf describes a job from its container's labels.
func (b *Backend) jobOf(c engine.Container) store.Job {
	l := c.Labels
	return store.Job{
		ID: l[contract.LabelJob], Host: b.Where(), ContainerID: c.ID, ContainerName: c.Name,
		Experiment: l[contract.LabelExperiment], ImageRef: l[contract.LabelImage], ImageID: c.ImageID,
		SpecHash: l[contract.LabelSpecHash], GPUs: l[contract.LabelGPUs], Mode: l[contract.LabelMode],
		Timeout: l[contract.LabelTimeout], Created: c.Created, Owner: l[contract.LabelOwner],
	}
}

// StateOf is a container's state in the backend's words.
func StateOf(c engine.Container) backend.State {
	s := backend.State{
		Phase: backend.Running, Detail: c.State, Message: c.Error,
		ExitCode: c.ExitCode, OOMKilled: c.OOMKilled,
		StartedAt: c.StartedAt, FinishedAt: c.FinishedAt,
		MemoryBytes: c.MemoryBytes, Timeout: c.Labels[contract.LabelTimeout],
	}
	switch {
	case c.Finished():
		s.Phase = backend.Exited
	case c.State == "created":
		s.Phase = backend.Pending
	}
	return s
}

// notFound turns the engine's not-found and unreachable into the
// backend's.
func notFound(err error) error {
	switch {
	case err == nil:
	case errors.Is(err, engine.ErrNotFound) && !errors.Is(err, backend.ErrNotFound):
		return fmt.Errorf("%w (%w)", err, backend.ErrNotFound)
	case engine.IsUnreachable(err) && !errors.Is(err, backend.ErrUnreachable):
		return fmt.Errorf("%w (%w)", err, backend.ErrUnreachable)
	}
	return err
}
