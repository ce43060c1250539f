package job

import (
	"context"
	"fmt"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/build"
	"github.com/xrun-dev/xrun/client/buildctx"
	"github.com/xrun-dev/xrun/client/exit"
	"github.com/xrun-dev/xrun/client/runnerbin"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/runner/contract"
)

// SlurmTarget is the Slurm cluster a submit runs on (xrun submit --slurm).
type SlurmTarget struct {
	// Login is the login node ([user@]host[:port], reached with ssh); ""
	// runs the Slurm commands of this machine.
	Login    string
	Settings store.SlurmSettings
}

// checkSlurm refuses what a Slurm job cannot do: it runs as the user,
// with the node's network, without an image.
func (a Args) checkSlurm() error {
	switch {
	case a.Where.K8s || a.Where.Explicit():
		return exit.Usagef("--slurm runs on a Slurm cluster: leave out --host, --context and --k8s")
	case a.Root:
		return exit.Usagef("--root does not apply with --slurm: a Slurm job runs as your user on the cluster")
	case a.Network != "" && a.Network != "default":
		return exit.Usagef("--network %s does not apply with --slurm: a Slurm job has its node's network", a.Network)
	case a.Base != "":
		return exit.Usagef("--base does not apply with --slurm: the job runs without a container, with the cluster's Python (--python)")
	case a.Settings().PendingLimit < 0:
		return exit.Usagef("--pending-limit %s: give a duration > 0", a.Settings().PendingLimit)
	}
	return nil
}

// Settings are the Slurm options a submit asks for (zero without --slurm).
func (a Args) Settings() store.SlurmSettings {
	if a.Slurm == nil {
		return store.SlurmSettings{}
	}
	return a.Slurm.Settings
}

// submitSlurm runs a submit on a Slurm cluster: no image is built; the
// experiment's code and the static runner go to the job's directory on
// the cluster, and the job is a batch job that runs the runner there with
// the cluster's Python (client/backend/slurm).
func (m *Manager) submitSlurm(ctx context.Context, r SubmitRequest) (*store.Job, error) {
	p := r.Prepared
	done := m.step("connect")
	b := m.Backends.Slurm(r.Slurm.Login)
	b.Settings = r.Slurm.Settings
	arch, err := b.Arch(ctx)
	done()
	if err != nil {
		return nil, err
	}
	runnerFor := m.RunnerFor
	if runnerFor == nil {
		runnerFor = runnerbin.For
	}
	if b.Runner, err = runnerFor(ctx, "linux", arch, func(f string, args ...any) { fmt.Fprintf(m.Err, f+"\n", args...) }); err != nil {
		return nil, err
	}
	if p.Code, err = buildctx.Collect(r.Build.Dir, p.Spec, nil); err != nil {
		return nil, exit.BadInput(err)
	}
	rec := newRecord(p, b.Where(), r.Build.Dir)
	rec.Submit = r.Rerun
	j, err := m.runImageless(ctx, b, rec, func(j *store.Job) backend.Spec {
		s := p.JobSpec(ctx, j, r.Build.Dir, build.JobOptions{Env: r.Job.Env, Root: true, PostToken: r.Job.PostToken})
		// Every process the runner starts is the job's, as the user's.
		s.Image, s.Env = "", append(s.Env, contract.EnvOwnTree+"=1")
		return s
	}, r)
	return j, refusedIsBadInput(err)
}
