package job

import (
	"context"
	"fmt"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/build"
	"github.com/xrun-dev/xrun/client/buildctx"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

// checkSlurm refuses Slurm options that contradict each other or the
// rest of the command line; what a Slurm job lacks (root, a network of
// its own, an image without the docker runtime) is its Capabilities'.
func (a Args) checkSlurm() error {
	switch {
	case a.Where.K8s || a.Where.Explicit():
		return contract.Usagef("--slurm runs on a Slurm cluster: leave out --host, --context and --k8s")
	case a.Settings().Python != "" && a.Settings().Runtime == store.RuntimeDocker:
		return contract.Usagef("--python does not apply with --slurm-runtime docker: the job's image has its Python")
	case a.Settings().PendingLimit < 0:
		return contract.Usagef("--pending-limit %s: give a duration > 0", a.Settings().PendingLimit)
	}
	return nil
}

// Settings are the Slurm options a submit asks for (zero without --slurm).
func (a Args) Settings() store.SlurmSettings {
	if a.Where.Slurm == nil {
		return store.SlurmSettings{}
	}
	return a.Where.Slurm.Settings
}

// submitSlurm runs a submit on a Slurm cluster: no image is built; the
// experiment's code and the static runner go to the job's directory on
// the cluster, and the job is a batch job that runs the runner there with
// the cluster's Python (client/backend/slurm).
func (m *Manager) submitSlurm(ctx context.Context, r SubmitRequest) (*store.Job, error) {
	p := r.Prepared
	done := m.step("connect")
	t := r.Where.Slurm
	b := m.Backends.Slurm(t.Login)
	b.Settings = t.Settings
	arch, err := b.Arch(ctx)
	done()
	if err != nil {
		return nil, err
	}
	runnerFor := m.RunnerFor
	if runnerFor == nil {
		runnerFor = build.RunnerBinary
	}
	docker := t.Settings.Runtime == store.RuntimeDocker
	var push *backend.Push // the docker runtime's image, and where it was built
	if docker {
		// The image is built on this machine's Docker host, as for a
		// Docker host's job, and copied to the cluster (Create).
		e, err := m.Backends.Engine(ctx, r.Where)
		if err != nil {
			return nil, err
		}
		builder := &build.Builder{Engine: e, Log: m.Err, TTY: m.ErrTTY, RunnerFor: runnerFor, Step: m.step}
		if err := builder.Build(ctx, p, r.Build); err != nil {
			return nil, err
		}
		push = &backend.Push{Builder: e}
	} else if b.Runner, err = runnerFor(ctx, "linux", arch, func(f string, args ...any) { fmt.Fprintf(m.Err, f+"\n", args...) }); err != nil {
		return nil, err
	}
	if p.Code == nil {
		if p.Code, err = buildctx.Collect(r.Build.Dir, p.Spec, nil); err != nil {
			return nil, contract.BadInput(err)
		}
	}
	rec := newRecord(p, b.Where(), r.Build.Dir)
	rec.Submit = r.Rerun
	j, err := m.runImageless(ctx, b, rec, func(j *store.Job) backend.Spec {
		if docker {
			// As on a Docker host: the runner as root in the container,
			// the code as the job user.
			s := p.JobSpec(ctx, j, r.Build.Dir, build.JobOptions{Env: r.Job.Env, PostToken: r.Job.PostToken})
			s.Push = push
			return s
		}
		s := p.JobSpec(ctx, j, r.Build.Dir, build.JobOptions{Env: r.Job.Env, Root: true, PostToken: r.Job.PostToken})
		// Every process the runner starts is the job's, as the user's.
		s.Image, s.Env = "", append(s.Env, contract.EnvOwnTree+"=1")
		return s
	}, r)
	return j, refusedIsBadInput(err)
}
