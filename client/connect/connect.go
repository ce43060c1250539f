// Package connect picks where a job runs and keeps the connections: a
// Docker host chosen as the docker CLI would (--host, DOCKER_HOST, the
// docker context, or a host named in xrun's config file: Resolve,
// LoadConfig), a Kubernetes cluster's namespace (--k8s;
// client/backend/kube), a Slurm cluster (--slurm) or this machine. It is
// the one catalog that names the backends (Capabilities). One Set serves
// one xrun invocation, which may talk to several hosts (a fan-out submit,
// ps across hosts).
package connect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/backend/dockerhost"
	"github.com/xrun-dev/xrun/client/backend/kube"
	"github.com/xrun-dev/xrun/client/backend/local"
	"github.com/xrun-dev/xrun/client/backend/slurm"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

// Selection is how the user picked where jobs run: --host and --context
// (both empty: DOCKER_HOST, DOCKER_CONTEXT, the current context or the
// local socket), or --k8s with the cluster's selection.
type Selection struct {
	Host    string
	Context string
	// K8s picks the Kubernetes cluster Kube instead of a Docker host;
	// --context then names a context of the kubeconfig.
	K8s  bool
	Kube kube.Selection
	// Slurm, when set, picks a Slurm cluster instead (--slurm); a job of
	// its docker runtime is built on the Docker host Host and Context pick.
	Slurm *SlurmTarget
}

// SlurmTarget is the Slurm cluster a submit runs on (xrun submit --slurm).
type SlurmTarget struct {
	// Login is the login node ([user@]host[:port], reached with ssh); ""
	// runs the Slurm commands of this machine.
	Login    string
	Settings slurm.Settings
}

// Docker is the Docker part of sel (the engine cache's key).
func (sel Selection) Docker() Selection {
	return Selection{Host: sel.Host, Context: sel.Context}
}

// Explicit reports whether the user named a host, context or cluster.
func (sel Selection) Explicit() bool {
	return sel.Host != "" || sel.Context != "" || sel.K8s
}

// MoveContextToKube moves --context to the cluster's side when --k8s is
// given.
func (sel *Selection) MoveContextToKube() {
	if sel.K8s {
		sel.Kube.Context, sel.Context = sel.Context, ""
	}
}

// Connector makes the engine of the Docker host sel picks.
type Connector func(ctx context.Context, sel Selection) (engine.Engine, error)

// Set makes and caches the engines and cluster connections of one xrun
// invocation. Its zero value connects to real daemons and clusters.
type Set struct {
	// Getenv reads the environment (nil: the process's).
	Getenv func(string) string
	// Connect makes the engine of a Docker host; tests replace it.
	Connect Connector
	// KubeLog receives a cluster backend's progress (image pushes), what
	// a submit leaves out (the compile cache) and what a Slurm job waits
	// for (drained nodes).
	KubeLog interface{ Write([]byte) (int, error) }
	// LocalRoot holds the directories of the jobs run on this machine
	// without a container (client/backend/local); "" leaves them out.
	LocalRoot string

	mu      sync.Mutex
	engines map[Selection]engine.Engine
	kubes   map[kube.Selection]*kube.Backend
}

func (s *Set) getenv(k string) string {
	if s.Getenv == nil {
		return os.Getenv(k)
	}
	return s.Getenv(k)
}

// Engine returns the (cached) engine of the Docker host sel picks,
// connecting and pinging it on first use.
func (s *Set) Engine(ctx context.Context, sel Selection) (engine.Engine, error) {
	sel = sel.Docker()
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.engines[sel]; ok {
		return e, nil
	}
	connect := s.Connect
	if connect == nil {
		connect = s.connectDocker
	}
	e, err := connect(ctx, sel)
	if err != nil {
		return nil, err
	}
	if s.engines == nil {
		s.engines = map[Selection]engine.Engine{}
	}
	s.engines[sel] = e
	return e, nil
}

func (s *Set) connectDocker(ctx context.Context, sel Selection) (engine.Engine, error) {
	// Resolve resolves --host/--context like the docker CLI, adds
	// named hosts from xrun's config, ssh options and TLS material, and
	// pings with one-sentence errors naming the host.
	t, err := Resolve(HostOptions{Host: sel.Host, Context: sel.Context, Getenv: s.Getenv})
	if err != nil {
		// An address that does not parse, a name no config defines, a
		// broken config: what the user gave is wrong, not the host.
		return nil, &contract.ExitError{Code: contract.ExitUsage, Err: err}
	}
	c, err := Connect(ctx, t)
	if err != nil {
		return nil, err
	}
	return engine.FromClient(t.Ref(), c), nil
}

// Kube returns the (cached) backend of a cluster's namespace, connecting
// on first use. A job's record names its context and namespace; the
// kubeconfig is the one the environment points at.
func (s *Set) Kube(ctx context.Context, sel kube.Selection) (*kube.Backend, error) {
	if sel.Kubeconfig == "" {
		sel.Kubeconfig = s.getenv("XRUN_KUBECONFIG")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.kubes[sel]; ok {
		return b, nil
	}
	b, err := kube.Connect(ctx, sel)
	if err != nil {
		return nil, err
	}
	if s.KubeLog != nil {
		b.Log = s.KubeLog
	}
	if s.kubes == nil {
		s.kubes = map[kube.Selection]*kube.Backend{}
	}
	s.kubes[sel] = b
	return b, nil
}

// Local returns the backend of the jobs run on this machine without a
// container (xrun run --local).
func (s *Set) Local() (*local.Backend, error) {
	if s.LocalRoot == "" {
		return nil, errors.New("no directory for local jobs: set XDG_DATA_HOME or HOME")
	}
	return local.New(s.LocalRoot), nil
}

// Slurm returns the backend of the Slurm cluster reached through login
// over ssh ("": the Slurm commands of this machine). A login that names
// an ssh:// host of xrun's config (docs/md) is reached with that
// host's address and ssh_options.
func (s *Set) Slurm(login string) *slurm.Backend {
	b := slurm.New(login)
	if s.KubeLog != nil {
		b.Log = s.KubeLog
	}
	if login == "" {
		return b
	}
	if t, err := Resolve(HostOptions{Host: login, Getenv: s.Getenv}); err == nil && t.Name == login && strings.HasPrefix(t.Host, "ssh://") {
		b.Shell = slurm.SSHShell{Login: t.Host, Options: t.SSHOptions}
	}
	return b
}

// SlurmDefaults fills what settings leave unset from the slurm: options
// of the named host login in xrun's config (docs/md), if it has
// them.
func (s *Set) SlurmDefaults(login string, settings slurm.Settings) slurm.Settings {
	if settings.Runtime == slurm.RuntimeBare {
		settings.Runtime = ""
	}
	if login == "" {
		return settings
	}
	t, err := Resolve(HostOptions{Host: login, Getenv: s.Getenv})
	if err != nil || t.Name != login || t.Slurm == nil {
		return settings
	}
	o := t.Slurm
	python := settings.Python
	for _, f := range []struct {
		dst *string
		val string
	}{{&settings.Partition, o.Partition}, {&settings.Account, o.Account}, {&settings.QOS, o.QOS}, {&settings.Constraint, o.Constraint},
		{&settings.Python, o.Python}, {&settings.Dir, o.Dir}, {&settings.Runtime, o.Runtime}} {
		if *f.dst == "" {
			*f.dst = f.val
		}
	}
	// The config's options first, so that the command line's win (sbatch
	// reads the last of two); those already there (a rerun's record) once.
	var extra []string
	for _, opt := range o.Sbatch {
		if !slices.Contains(settings.Sbatch, opt) {
			extra = append(extra, opt)
		}
	}
	settings.Sbatch = append(extra, settings.Sbatch...)
	if settings.Runtime == slurm.RuntimeBare {
		settings.Runtime = ""
	}
	if settings.Runtime == slurm.RuntimeDocker {
		// The job's image has its Python: the login node's python: is
		// for bare jobs, and only a --python given for this job conflicts.
		settings.Python = python
	}
	return settings
}

// For returns the backend of the Docker host, cluster or machine that job
// j was submitted to (its record's Host). A job run on another machine's
// processes (a job store shared over a network file system) is not this
// machine's to look at: that is an unreachable host.
func (s *Set) For(ctx context.Context, j *store.Job) (backend.Backend, error) {
	if kube.IsRef(j.Host) {
		return s.Kube(ctx, kube.ParseRef(j.Host))
	}
	if slurm.IsRef(j.Host) {
		login, machine := slurm.ParseRef(j.Host)
		if b := s.Slurm(login); machine == "" || b.Where() == j.Host {
			return b, nil
		}
		return nil, fmt.Errorf("job %s runs on the Slurm cluster of %s, whose commands are not on this machine: look at it with xrun there (%w)", j.ID, machine, backend.ErrUnreachable)
	}
	if local.IsRef(j.Host) {
		b, err := s.Local()
		if err != nil {
			return nil, err
		}
		if b.Where() != j.Host {
			return nil, fmt.Errorf("job %s runs as a process of %s, not of this machine (%s): look at it with xrun there (%w)", j.ID, strings.TrimPrefix(j.Host, local.Scheme), b.Host, backend.ErrUnreachable)
		}
		return b, nil
	}
	e, err := s.Engine(ctx, Selection{Host: j.Host})
	if err != nil {
		return nil, err
	}
	return s.dockerHost(e), nil
}

// IsLocal reports whether a job's host (its record's Host) is a machine's
// own processes (xrun run --local) rather than a Docker host, a cluster
// or a Slurm cluster.
func IsLocal(host string) bool { return local.IsRef(host) }

// Describe names what runs job j in its backend's words, for xrun
// status: the rows that say where (a container; a Kubernetes Job; a Slurm
// job and its directory) and what its state row is called. It reads the
// record alone, so it answers for a host that cannot be reached.
func Describe(j *store.Job) (rows [][2]string, state string) {
	switch {
	case slurm.IsRef(j.Host):
		return slurm.Describe(j)
	case kube.IsRef(j.Host):
		return kube.Describe(j)
	}
	return [][2]string{{"container", j.ContainerName}}, "container state"
}

// Target is where a submit goes: the backend that runs the job, the
// Docker host that builds its image, and whether the job runs on that
// host (a Docker host: it probes the host's GPUs before the build, and
// the job's default memory limit is a share of the host's) or elsewhere
// (a cluster, which gets the image from the builder: Push). A place that
// runs the runner without an image (a Slurm cluster's bare runtime) has
// no Builder: the job copies the static runner of RunnerArch there.
type Target struct {
	Backend    backend.Backend
	Builder    engine.Engine
	OnBuilder  bool
	RunnerArch string
}

// Target connects to where sel sends a submit: the Docker host, or the
// cluster with the Docker host (--host, default the local one) that
// builds and pushes its images.
func (s *Set) Target(ctx context.Context, sel Selection) (Target, error) {
	switch {
	case sel.Slurm != nil:
		b := s.Slurm(sel.Slurm.Login)
		b.Settings = sel.Slurm.Settings
		// The cluster is reached before minutes of building.
		arch, err := b.Arch(ctx)
		if err != nil {
			return Target{}, err
		}
		if b.Settings.Runtime != slurm.RuntimeDocker {
			return Target{Backend: b, RunnerArch: arch}, nil
		}
		// The docker runtime's image is built on this machine's Docker
		// host, as a Docker host's job's, and copied to the cluster.
		e, err := s.Engine(ctx, sel)
		if err != nil {
			return Target{}, err
		}
		return Target{Backend: b, Builder: e}, nil
	case sel.K8s:
		kb, err := s.Kube(ctx, sel.Kube)
		if err != nil {
			return Target{}, err
		}
		e, err := s.Engine(ctx, sel)
		if err != nil {
			return Target{}, err
		}
		return Target{Backend: kb, Builder: e}, nil
	}
	e, err := s.Engine(ctx, sel)
	if err != nil {
		return Target{}, err
	}
	b := s.dockerHost(e)
	b.FakeGPUs = s.FakeGPUs(sel)
	return Target{Backend: b, Builder: e, OnBuilder: true}, nil
}

// dockerHost is the backend of the Docker host whose engine is e.
func (s *Set) dockerHost(e engine.Engine) *dockerhost.Backend {
	return &dockerhost.Backend{Engine: e, Getenv: s.Getenv}
}

// Selected returns the backend the user picked with --host, --context or
// a cluster's options (commands that look beyond the job store: ps, rm,
// prune).
func (s *Set) Selected(ctx context.Context, sel Selection) (backend.Backend, error) {
	if sel.Slurm != nil {
		b := s.Slurm(sel.Slurm.Login)
		b.Settings = sel.Slurm.Settings
		return b, nil
	}
	if sel.K8s {
		return s.Kube(ctx, sel.Kube)
	}
	e, err := s.Engine(ctx, sel)
	if err != nil {
		return nil, err
	}
	return s.dockerHost(e), nil
}

// FakeGPUs is the test inventory a named host of xrun's config declares
// (gpus: N; docs/md), or 0.
func (s *Set) FakeGPUs(sel Selection) int {
	t, err := Resolve(HostOptions{Host: sel.Host, Context: sel.Context, Getenv: s.Getenv})
	if err != nil {
		return 0
	}
	return t.FakeGPUs
}

// Close releases every engine connection.
func (s *Set) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.engines {
		e.Close()
	}
	s.engines = nil
}
