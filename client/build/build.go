// Package build turns an experiment directory into a job that a backend
// can run: it loads and checks the spec, collects the code, builds the job
// image on a Docker engine (skipped when one with the same content hash is
// there) and assembles the job's spec (labels, environment, limits). The
// image holds everything but the code, which goes into the job beside it,
// so a code edit costs no build. The static runner binary that goes into
// the image is found or built here too (RunnerBinary).
package build

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/docker/go-units"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/buildctx"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/images"
	"github.com/xrun-dev/xrun/internal/text"
	"github.com/xrun-dev/xrun/internal/version"
	"github.com/xrun-dev/xrun/spec"
)

// DefaultPidsLimit caps a job's processes and threads: far above what a
// benchmark with a compiler pool uses, far below what takes a host down.
const DefaultPidsLimit = 8192

// DefaultShmBytes is a job's /dev/shm unless resources.shm says: PyTorch
// DataLoader workers and NCCL need more than Docker's 64 MiB.
const DefaultShmBytes = 1 << 30

// DefaultMemory is a job's memory limit when resources.memory sets none:
// three quarters of the host's, so that a runaway job is killed before the
// host (and every other job on it) runs out.
func DefaultMemory(hostBytes int64) int64 { return hostBytes / 4 * 3 }

// Options are what the user asked of a submit.
type Options struct {
	Dir string
	// GPUs is --gpus ("" for the spec's); CPU runs without GPUs.
	GPUs string
	CPU  bool
	// Timeout overrides resources.timeout when set.
	Timeout time.Duration
	// CPUs overrides resources.cpus when set (--cpus).
	CPUs int
	// Base overrides the base image image.base resolves to.
	Base    string
	NoCache bool
	// Verbose prints the image build's output in full; otherwise a line
	// per step (a status line on a terminal), and the full output only on
	// a failure.
	Verbose bool
	// Labels are the user's labels for the image and the job.
	Labels map[string]string
}

// Prepared is an experiment ready to run as a job: its spec, its GPU
// request and, once Build ran, its image and code.
type Prepared struct {
	Spec *spec.Spec
	// Info is the builder's daemon.
	Info     engine.Info
	ImageRef string
	ImageID  string
	// Code is the experiment's code, which goes into the job beside the image.
	Code *buildctx.Context
	// GPUs is nil for a CPU job; GPULabel says what was asked ("1", "all", "0" for CPU).
	GPUs     *backend.GPUs
	GPULabel string
	// GPUIDs are the GPU indices a Docker host assigned ("0,2"), or "".
	GPUIDs  string
	Mode    string // gpu or cpu
	Timeout time.Duration
	Labels  map[string]string
	// BuildLog is the image build's full output, empty when the image
	// was on the host already (BuildLogFile in the job's store).
	BuildLog []byte
}

// Load reads and checks the spec and the GPU request: everything that
// needs no host.
func Load(o Options) (*Prepared, error) {
	s, err := spec.Load(o.Dir)
	if err != nil {
		return nil, contract.BadInput(err)
	}
	p := &Prepared{Spec: s, Timeout: s.Resources.Timeout.Duration, Mode: "gpu", Labels: o.Labels}
	if o.Timeout > 0 {
		p.Timeout = o.Timeout
	}
	if o.CPUs > 0 {
		s.Resources.CPUs = o.CPUs
	}
	// resources.gpus: 0 is a CPU experiment, unless --gpus asks otherwise.
	if o.CPU || o.GPUs == "" && s.Resources.GPUs.Zero {
		p.Mode, p.GPULabel = "cpu", "0"
		return p, nil
	}
	g := s.Resources.GPUs
	if o.GPUs != "" {
		if g, err = spec.ParseGPUs(o.GPUs); err != nil {
			return nil, contract.Usagef("--gpus %q: %v", o.GPUs, err)
		}
		if g.None() {
			return nil, contract.Usagef("--gpus %s asks for no GPU: pass --cpu to run without one, or --gpus device=0 for GPU 0", o.GPUs)
		}
	}
	if g.None() {
		g.Count = 1
	}
	p.GPULabel = g.String()
	switch {
	case g.All:
		p.GPUs = &backend.GPUs{Count: -1}
	case len(g.IDs) > 0:
		p.GPUs = &backend.GPUs{IDs: g.IDs}
	default:
		p.GPUs = &backend.GPUs{Count: g.Count}
	}
	return p, nil
}

// Builder builds job images on a Docker engine.
type Builder struct {
	Engine engine.Engine
	// Log gets progress and warnings, a line at a time.
	Log io.Writer
	// TTY is Log's terminal, unsanitised, where it is one (nil
	// elsewhere): the build's steps are a status line there.
	TTY io.Writer
	// RunnerFor returns the runner binary for a platform (RunnerBinary).
	RunnerFor func(ctx context.Context, goos, goarch string, logf func(string, ...any)) (string, error)
	// Step, when set, is called at the start of each step and the
	// function it returns at its end (tracing).
	Step func(name string) func()
	// ProbeGPUs checks, before the build, that the engine's host can run
	// GPU containers when its daemon does not say (it runs the job).
	ProbeGPUs bool
}

func (b *Builder) step(name string) func() {
	if b.Step == nil {
		return func() {}
	}
	return b.Step(name)
}

func (b *Builder) logf(format string, args ...any) { fmt.Fprintf(b.Log, format+"\n", args...) }

// Build collects the code and builds (or finds) the job image of p.
func (b *Builder) Build(ctx context.Context, p *Prepared, o Options) error {
	var err error
	done := b.step("info")
	if p.Info, err = b.Engine.Info(ctx); err != nil {
		return err
	}
	done()
	// The GPU runtime is checked before the base, which for a GPU job is a
	// CUDA image of gigabytes: a host without the runtime is told so, not
	// that the CUDA base is missing.
	probed := false
	if b.ProbeGPUs && p.GPUs != nil && !p.Info.NvidiaRuntime {
		if err := ProbeGPUScratch(ctx, b.Engine, p.GPUs); err != nil {
			return err
		}
		probed = true
	}
	done = b.step("context")
	if p.Code, err = buildctx.Collect(o.Dir, p.Spec, b.contextProgress()); err != nil {
		return contract.BadInput(err)
	}
	done()
	done = b.step("base")
	base, baseNote, err := b.pickBase(ctx, p.Spec.Image, o.Base, p.Mode == "cpu")
	if err != nil {
		return err
	}
	done()
	if b.ProbeGPUs && p.GPUs != nil && !p.Info.NvidiaRuntime && !probed {
		if err := ProbeGPU(ctx, b.Engine, base, p.GPUs); err != nil {
			return err
		}
	}
	// The base's id is a label of the job image, so that a base remade
	// under the same tag changes the content hash and the image is rebuilt.
	baseID := ""
	if base != "scratch" {
		if baseID, err = b.Engine.ImageID(ctx, base); err != nil {
			return fmt.Errorf("inspect base image %s: %w", base, err)
		}
	}
	done = b.step("runner")
	runner, err := b.RunnerFor(ctx, p.Info.OS, p.Info.Arch, b.logf)
	if err != nil {
		return fmt.Errorf("get the runner for %s/%s: %w", p.Info.OS, p.Info.Arch, err)
	}
	done()
	df, err := buildctx.Dockerfile(buildctx.DockerfileOptions{
		Base:       base,
		Apt:        p.Spec.Image.Apt,
		Python:     p.Spec.Image.Python,
		RunnerSrc:  "xrun-runner",
		Experiment: p.Spec.Name,
		Labels:     imageLabels(p.Spec, baseID, store.CurrentUser(), p.Labels),
	})
	if err != nil {
		return contract.BadInput(err)
	}
	extras := []buildctx.Extra{
		{Name: "Dockerfile", Mode: 0o644, Data: df},
		{Name: "xrun-runner", Mode: 0o755, Src: runner},
	}
	extras = append(extras, buildctx.SkelDirs()...)
	done = b.step("hash")
	// The image holds all but the code, so a code edit reuses it.
	hash, err := buildctx.HashExtras(extras...)
	if err != nil {
		return err
	}
	done()
	p.ImageRef = "xrun/" + p.Spec.Name + ":" + hash[:12]
	done = b.step("image-exists")
	p.ImageID, err = b.Engine.ImageID(ctx, p.ImageRef)
	done()
	switch {
	case err == nil && o.NoCache:
		b.logf("image %s is on %s: rebuilding every layer (--no-cache)", p.ImageRef, b.Engine.Host())
	case err == nil:
		b.logf("image %s is on %s: build skipped", p.ImageRef, b.Engine.Host())
		return nil
	case !errors.Is(err, engine.ErrNotFound):
		return err
	default:
		if baseNote != "" {
			b.logf("%s", baseNote)
		}
		b.logf("building %s on %s", p.ImageRef, b.Engine.Host())
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(buildctx.WriteExtras(pw, extras...)) }()
	out := &buildOutput{st: render.NewStatus(b.Log, b.TTY), verbose: o.Verbose, start: time.Now()}
	p.ImageID, err = b.Engine.Build(ctx, pr, engine.BuildOptions{Tag: p.ImageRef, NoCache: o.NoCache}, out.line)
	pr.Close()
	p.BuildLog = out.full.Bytes()
	if err != nil {
		if ctx.Err() != nil {
			out.st.Clear()
			return &contract.ExitError{Code: contract.ExitCancelled, Err: errors.New("interrupted during the image build")}
		}
		out.failed()
		var be *engine.BuildError
		if errors.As(err, &be) && !o.Verbose {
			be.Last = nil // printed in full just above
		}
		return err
	}
	out.done(p.ImageRef)
	return nil
}

// imageLabels are the image's labels. User labels go into the Dockerfile
// with xrun's own rather than as build labels: the classic builder would
// add them as one more step, rebuilt on every change.
//
// The owner (store.CurrentUser, as on the job's container) makes an image
// its builder's: xrun prune removes only its user's images unless
// --all-users, and two users of one host never share a job image.
func imageLabels(s *spec.Spec, baseID, owner string, user map[string]string) map[string]string {
	// Not xrun.yaml's hash: the image holds no more of the spec than its
	// base, packages and name, so that an edit of the rest (a case, a
	// setting) reuses the image, and the standby the last submit left.
	labels := map[string]string{
		contract.LabelExperiment:    s.Name,
		contract.LabelClientVersion: version.Version,
	}
	if baseID != "" {
		labels[contract.LabelBaseID] = baseID
	}
	if owner != "" {
		labels[contract.LabelOwner] = owner
	}
	for k, v := range user {
		labels[k] = v
	}
	return labels
}

// contextProgress reports the hashing of large contexts, and the large
// files going into them.
func (b *Builder) contextProgress() *buildctx.Reporter {
	var last time.Time
	return &buildctx.Reporter{
		Progress: func(files int, bytes int64) {
			if bytes < 64<<20 || time.Since(last) < time.Second {
				return
			}
			last = time.Now()
			b.logf("reading build context: %d files, %s", files, units.HumanSize(float64(bytes)))
		},
		Warn: func(msg string) { b.logf("warning: %s", msg) },
	}
}

// pickBase resolves the base image (override: --base) and makes sure it
// is on the host. A CPU run (cpu: the job's mode, from --cpu or the
// spec's resources.gpus: 0) of a spec that names no base, or a base of
// the table, takes any CPU base of the table that the host has (one made
// offline with images/make-cpu-base.sh) when the default CPU base is
// missing; note then says so, for the build's output (a submit that
// builds nothing does not repeat it).
func (b *Builder) pickBase(ctx context.Context, img spec.Image, override string, cpu bool) (base, note string, err error) {
	if override != "" {
		return override, "", b.ensureBase(ctx, override, cpu)
	}
	base, err = images.Resolve(img, cpu)
	if err != nil {
		return "", "", contract.BadInput(err)
	}
	if cpu && img.Torch == "" && img.CUDA == "" && (img.Base == "" || images.Named(img.Base)) {
		if ok, err := b.Engine.ImageExists(ctx, base); err != nil || ok {
			return base, "", err
		}
		for _, row := range images.Default().Images {
			if !row.CPU() || row.Ref == base {
				continue
			}
			if ok, _ := b.Engine.ImageExists(ctx, row.Ref); ok {
				return row.Ref, fmt.Sprintf("default CPU base %s is not on %s: using %s", base, b.Engine.Host(), row.Ref), nil
			}
		}
	}
	return base, "", b.ensureBase(ctx, base, cpu)
}

// ensureBase makes sure the base image is on the host, pulling it once;
// an offline host gets a sentence saying how to make the image instead.
func (b *Builder) ensureBase(ctx context.Context, base string, cpu bool) error {
	if base == "scratch" {
		return nil
	}
	ok, err := b.Engine.ImageExists(ctx, base)
	if err != nil || ok {
		return err
	}
	b.logf("base image %s is not on %s: pulling it", base, b.Engine.Host())
	pctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	// Where the pull stands: a status line on a terminal, else a line
	// every pullLineEvery.
	st := render.NewStatus(b.Log, b.TTY)
	start := time.Now()
	var last engine.PullProgress
	var said time.Time
	err = b.Engine.Pull(pctx, base, func(p engine.PullProgress) {
		last = p
		switch {
		case st.Live():
			st.Set("pulling " + base + ": " + p.String())
		case time.Since(said) >= pullLineEvery:
			said = time.Now()
			st.Println("pulling " + base + ": " + p.String())
		}
	})
	st.Clear()
	if err == nil {
		got := last.String()
		if last.Layers == 0 {
			got = "the host had its layers"
		}
		b.logf("pulled %s in %s (%s)", base, time.Since(start).Round(time.Second), got)
	}
	if err != nil {
		if ctx.Err() != nil {
			return &contract.ExitError{Code: contract.ExitCancelled, Err: errors.New("interrupted while pulling the base image")}
		}
		how := "build it on that host from images/ (see images/README.md)"
		if row, ok := images.Lookup(base); ok {
			how = "build it on that host with `" + row.HowToMake() + "`"
		} else if !strings.ContainsAny(base, "/:@") {
			// A bare word is more likely a misspelt base name than an
			// image on Docker Hub.
			how = fmt.Sprintf("%s is not one of xrun's bases (%s); if it is meant to be an image reference, %s",
				base, strings.Join(images.Default().Names(), ", "), how)
		}
		if !cpu {
			how += ", or make a CPU base with `images/make-cpu-base.sh` and submit with --cpu"
		}
		return fmt.Errorf("base image %s is not on host %s and could not be pulled (%s): %s", base, b.Engine.Host(), text.OneLine(err.Error()), how)
	}
	return nil
}

// pullLineEvery is how often a pull's progress is a line of its own where
// stderr is no terminal.
const pullLineEvery = 10 * time.Second

// NoGPURuntimeError is a GPU job asked of a Docker host that cannot give
// containers GPUs. Its message is one sentence: what is missing, what to do.
type NoGPURuntimeError struct {
	Host string
	Err  error // the daemon's refusal, errors.Is engine.ErrNoGPURuntime
}

func (e *NoGPURuntimeError) Error() string {
	return fmt.Sprintf("Docker host %s has no NVIDIA GPU runtime for this GPU job: submit with --cpu to run without GPUs, or install the NVIDIA Container Toolkit on the host (docs/gpu-host.md)", e.Host)
}

func (e *NoGPURuntimeError) Unwrap() error { return e.Err }

// ProbeImage is the empty image ProbeGPUScratch starts: FROM scratch and
// a label, built on the host in a second, with nothing to pull.
const ProbeImage = "xrun/gpu-probe:scratch"

// ProbeGPUScratch is ProbeGPU on an empty image, for before the base is
// on the host. The daemon picks the device driver before it looks for the
// command, so a missing runtime fails the start either way; a host that
// has one fails it on the missing "true" instead, which ProbeGPU ignores.
func ProbeGPUScratch(ctx context.Context, e engine.Engine, gpus *backend.GPUs) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	df := []byte("FROM scratch\nLABEL org.opencontainers.image.title=xrun-gpu-probe\n")
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df))}); err != nil {
		return err
	}
	if _, err := tw.Write(df); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	// The experiment label makes it one of xrun's images, which xrun
	// prune removes once no container uses it.
	o := engine.BuildOptions{Tag: ProbeImage, Labels: map[string]string{contract.LabelExperiment: "gpu-probe"}}
	if _, err := e.Build(ctx, &buf, o, func(string) {}); err != nil {
		return fmt.Errorf("build the GPU probe image on %s: %w", e.Host(), err)
	}
	return ProbeGPU(ctx, e, ProbeImage, gpus)
}

// ProbeGPU starts a throwaway container of base with the job's GPU
// request. A daemon can serve GPU requests without a registered "nvidia"
// runtime (the nvidia-container-runtime-hook on its PATH is enough), so
// Info alone cannot say no; the start can, before a long build.
func ProbeGPU(ctx context.Context, e engine.Engine, base string, gpus *backend.GPUs) error {
	id, err := e.Create(ctx, engine.ContainerSpec{
		Image: base, Entrypoint: []string{"true"}, GPUs: &engine.GPURequest{Count: gpus.Count, IDs: gpus.IDs},
		Labels: map[string]string{contract.LabelJob: contract.ProbeJob}, NetworkDisabled: true,
	})
	if err != nil {
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		e.Remove(rctx, id, true)
	}()
	err = e.Start(ctx, id)
	switch {
	case errors.Is(err, engine.ErrNoGPURuntime):
		return &NoGPURuntimeError{Host: e.Host(), Err: err}
	case errors.Is(err, engine.ErrIncompleteGPURuntime):
		return fmt.Errorf("host %s: %w", e.Host(), err)
	}
	// Any other failure (no "true" in a scratch base, no GPU free) is the
	// job's to report.
	return nil
}

// JobOptions are the run-time choices of a submit.
type JobOptions struct {
	// Env is the job's environment from the spec's env: and --env.
	Env []string
	// Root runs the job as root with the default capabilities.
	Root bool
	// CapAdd adds capabilities to a Root job (backend.Spec.CapAdd).
	CapAdd []string
	// NoNetwork runs the job without a network.
	NoNetwork bool
	// HostMemory is the memory of the host the job runs on, for the
	// default limit (0: unknown, no default: a cluster's own defaults apply).
	HostMemory int64
	// PostToken is the bearer token for XRUN_POST_URL (backend.Spec.PostToken).
	PostToken string
	// CacheVolume and CacheLabels are the compile-cache volume
	// (backend.Spec.CacheVolume); "" for none.
	CacheVolume string
	CacheLabels map[string]string
	// CacheLimit is the most bytes the cache volume may hold as the job
	// starts (contract.EnvCacheLimit; 0: no limit).
	CacheLimit int64
	// CPUSet is the host CPUs the job runs on (backend.Spec.CPUSet).
	CPUSet string
}

// JobSpec is the spec job j is created with: the image and code of p, the
// job's labels and environment, and its limits.
func (p *Prepared) JobSpec(ctx context.Context, j *store.Job, dir string, o JobOptions) backend.Spec {
	labels := map[string]string{
		contract.LabelJob:           j.ID,
		contract.LabelExperiment:    p.Spec.Name,
		contract.LabelSpecHash:      p.Spec.Hash,
		contract.LabelGPUs:          p.GPULabel,
		contract.LabelClientVersion: version.Version,
		contract.LabelImage:         p.ImageRef,
		contract.LabelMode:          p.Mode,
		contract.LabelCodeHash:      p.Code.Hash,
	}
	if p.Timeout > 0 {
		labels[contract.LabelTimeout] = p.Timeout.String()
	}
	if j.Owner != "" {
		labels[contract.LabelOwner] = j.Owner
	}
	if p.GPUIDs != "" {
		labels[gpus.LabelGPUIDs] = p.GPUIDs
	}
	for k, v := range p.Labels {
		labels[k] = v
	}
	env := append([]string(nil), o.Env...)
	env = append(env,
		contract.EnvJobID+"="+j.ID,
		contract.EnvClientVersion+"="+version.Version,
		contract.EnvImageDigest+"="+p.ImageID,
		contract.EnvCodeHash+"="+p.Code.Hash,
		contract.EnvMode+"="+p.Mode,
	)
	if commit, dirty := version.GitHead(ctx, dir, p.Spec.Include...); commit != "" {
		env = append(env, contract.EnvGitCommit+"="+commit)
		if dirty {
			env = append(env, contract.EnvGitDirty+"=1")
		}
	}
	if !o.Root {
		// The job user has no entry in the image's /etc/passwd; getpass
		// (torch.compile's cache, for one) reads these before asking it.
		env = append(env, "USER=xrun", "LOGNAME=xrun", contract.EnvWorkerUser+"="+contract.JobUser)
	}
	s := backend.Spec{
		Name:        JobName(p.Spec.Name, j.ID),
		Image:       p.ImageRef,
		Code:        p.Code,
		Env:         env,
		Labels:      labels,
		GPUs:        p.GPUs,
		GPUType:     p.Spec.Resources.GPUType,
		ShmBytes:    int64(p.Spec.Resources.Shm),
		MemoryBytes: int64(p.Spec.Resources.Memory),
		CPUs:        p.Spec.Resources.CPUs,
		PidsLimit:   DefaultPidsLimit,
		Root:        o.Root,
		CapAdd:      o.CapAdd,
		NoNetwork:   o.NoNetwork,
		Timeout:     p.Timeout,
		PostToken:   o.PostToken,
		CacheVolume: o.CacheVolume,
		CacheLabels: o.CacheLabels,
		CacheLimit:  o.CacheLimit,
		HostName:    p.Info.Name,
		CPUSet:      o.CPUSet,
	}
	if n := p.Spec.Resources.Pids; n > 0 {
		s.PidsLimit = int64(n)
	}
	if s.MemoryBytes == 0 && o.HostMemory > 0 {
		s.MemoryBytes = DefaultMemory(o.HostMemory)
	}
	if s.ShmBytes == 0 {
		s.ShmBytes = DefaultShmBytes
	}
	return s
}

// JobName is the name of job id's container (or Kubernetes Job).
func JobName(experiment, id string) string { return "xrun-" + experiment + "-" + id }
