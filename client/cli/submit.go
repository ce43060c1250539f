package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/xrun-dev/xrun/runner/contract"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/go-units"
	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/buildctx"
	"github.com/xrun-dev/xrun/client/dockerfile"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/images"
	"github.com/xrun-dev/xrun/runner/report"
	"github.com/xrun-dev/xrun/runner/result"
	"github.com/xrun-dev/xrun/runner/run"
	"github.com/xrun-dev/xrun/runner/spec"
	"github.com/xrun-dev/xrun/runner/version"
)

type submitOptions struct {
	dir     string
	host    HostSelection
	detach  bool
	gpus    string
	cpu     bool
	env     []string
	timeout time.Duration
	base    string
	json    bool
	labels  []string
	noCache bool
	// hosts are every --host given: more than one fans out.
	hosts []string
	// queue waits for busy GPUs instead of failing.
	queue bool
	// root runs the job as root with the default capabilities.
	root bool
	// network is "default" or "none".
	network string
}

// DefaultPidsLimit caps a job's processes and threads: far above what a
// benchmark with a compiler pool uses, far below what takes a host down.
const DefaultPidsLimit = 8192

// defaultMemory is a job's memory limit when resources.memory sets none:
// three quarters of the host's, so that a runaway job is killed before the
// host (and every other job on it) runs out.
func defaultMemory(hostBytes int64) int64 { return hostBytes / 4 * 3 }

func newSubmitCommand(a *App) *cli.Command {
	var o submitOptions
	return &cli.Command{
		Name:      "submit",
		Usage:     "build an experiment's image and run it as a job on a Docker host",
		ArgsUsage: "DIR",
		Description: `Validates DIR/xrun.yaml, builds the image (skipped when an image with the same
content hash is already on the host), and runs the runner in a container.

Attached (the default), it streams the job's logs to stderr, copies /xrun/out
back into the job store, prints the results table on stdout and exits with the
job's status. Ctrl-C stops the container gracefully and removes it; a second
Ctrl-C kills and removes it at once; a third exits without waiting.

Exit codes (the runner's, with xrun's own failures in the same places):
  0    succeeded
  1    the criteria failed (and nothing else)
  2    an implementation failed, crashed or ran out of memory
  3    bad arguments, spec or job id
  4    infrastructure: no daemon, no GPU runtime, a failed build or pull,
       an unreadable job store, the runner's own infrastructure errors
  124  timed out
  130  cancelled, or interrupted by Ctrl-C

With --detach it prints the job id alone on stdout and returns; follow the job
with xrun logs -f, wait, status, results, cancel and rm.

Examples:
  xrun submit --cpu experiments/039-gla-pingpong
  id=$(xrun submit -d --gpus 1 experiments/039-gla-pingpong) && xrun wait $id
  xrun submit --host ssh://me@gpu-box --gpus 0,2 --env HF_TOKEN experiments/039-gla-pingpong
  xrun submit --gpus device=1 experiments/039-gla-pingpong                 # GPU 1 only
  xrun submit --host lab --host cloud --queue experiments/039-gla-pingpong   # on both at once
  xrun submit --base xrun/cpu-base:bookworm --timeout 10m my-kernel

Jobs run as uid 65532 without capabilities (--root to run as root), with
at most 8192 processes and threads, and a memory limit of resources.memory,
else three quarters of the host's memory. --env values are kept in the
container's configuration on the host until xrun rm removes it.`,
		Flags: append(hostFlags(&o.host),
			&cli.BoolFlag{Name: "detach", Aliases: []string{"d"}, Usage: "print the job id and return once the job is running", Destination: &o.detach},
			&cli.StringFlag{Name: "gpus", EnvVars: []string{"XRUN_GPUS"}, Usage: "GPUs to request: a count, device ids (device=0, 0,2 or GPU-uuid) or all (default: resources.gpus, else 1)", Destination: &o.gpus},
			&cli.BoolFlag{Name: "queue", EnvVars: []string{"XRUN_QUEUE"}, Usage: "when the GPUs asked for are held by other jobs, wait for them instead of failing", Destination: &o.queue},
			&cli.BoolFlag{Name: "cpu", EnvVars: []string{"XRUN_CPU"}, Usage: "run without GPUs (XRUN_MODE=cpu: the CPU sweep, GPU-only implementations skipped)", Destination: &o.cpu},
			&cli.StringSliceFlag{Name: "env", Aliases: []string{"e"}, Usage: "pass host variable NAME (or NAME=value) to the job at run time, besides the spec's env:"},
			&cli.DurationFlag{Name: "timeout", EnvVars: []string{"XRUN_TIMEOUT"}, Usage: "stop the job after this long (default: resources.timeout)", Destination: &o.timeout},
			&cli.StringFlag{Name: "base", EnvVars: []string{"XRUN_BASE"}, Usage: "base image reference, instead of the one image.base resolves to", Destination: &o.base},
			&cli.BoolFlag{Name: "json", Usage: "print the job record (attached: after it ends) as JSON on stdout", Destination: &o.json},
			&cli.StringSliceFlag{Name: "label", Usage: "add label KEY=VALUE to the job's image and container"},
			&cli.BoolFlag{Name: "no-cache", Usage: "rebuild every layer of the image", Destination: &o.noCache},
			&cli.BoolFlag{Name: "root", EnvVars: []string{"XRUN_ROOT"}, Usage: "run the job as root with Docker's default capabilities (default: uid 65532, no capabilities, no-new-privileges)", Destination: &o.root},
			&cli.StringFlag{Name: "network", EnvVars: []string{"XRUN_NETWORK"}, Value: "default", Usage: "the job's network: default (the daemon's bridge) or none", Destination: &o.network},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("submit takes one experiment directory, got %d arguments (see xrun submit --help)", c.NArg())
			}
			o.dir = c.Args().First()
			if o.network != "default" && o.network != "none" {
				return usageError("--network %q: give default or none", o.network)
			}
			o.env = c.StringSlice("env")
			o.labels = c.StringSlice("label")
			o.hosts = c.StringSlice("host")
			if len(o.hosts) > 0 {
				o.host.Host = o.hosts[0]
			}
			if len(o.hosts) > 1 {
				return runSubmitFanout(c.Context, a, o, o.hosts)
			}
			return runSubmit(c.Context, a, o)
		},
	}
}

// prepared is a built image ready to run as a job.
type prepared struct {
	spec     *spec.Spec
	eng      engine.Engine
	info     engine.Info
	imageRef string
	imageID  string
	// code is the experiment's code, copied into the job's container
	// before it starts (the image holds everything else).
	code     *buildctx.Context
	gpus     *engine.GPURequest
	gpuLabel string
	// gpuIDs are the GPU indices assigned on the host ("0,2").
	gpuIDs  string
	mode    string
	timeout time.Duration
	labels  map[string]string
}

func runSubmit(ctx context.Context, a *App, o submitOptions) error {
	p, err := a.prepare(ctx, o)
	if err != nil {
		return err
	}
	st, err := a.Store()
	if err != nil {
		return err
	}
	env, err := a.jobEnv(p.spec, o.env)
	if err != nil {
		return err
	}
	j := &jobs.Job{
		Host:       p.eng.Host(),
		Experiment: p.spec.Name,
		ImageRef:   p.imageRef,
		ImageID:    p.imageID,
		SpecHash:   p.spec.Hash,
		GPUs:       p.gpuLabel,
		Mode:       p.mode,
		Status:     jobs.StatusCreated,
	}
	if abs, err := filepath.Abs(o.dir); err == nil {
		j.ExperimentDir = abs
	}
	if p.timeout > 0 {
		j.Timeout = p.timeout.String()
	}
	if err := st.Create(j); err != nil {
		return err
	}
	if a.onJob != nil {
		a.onJob(j)
	}
	releaseGPUs, err := a.assignGPUs(ctx, p, j, o.host, o.queue)
	if err != nil {
		now := time.Now().UTC()
		j.Status, j.Error, j.Finished = result.StatusFailed, err.Error(), &now
		st.Save(j)
		return err
	}
	if p.gpuIDs != "" {
		j.GPUs = p.gpuIDs
	}
	if !o.detach {
		defer releaseGPUs()
	}
	j.ContainerName = "xrun-" + p.spec.Name + "-" + j.ID
	labels := map[string]string{
		contract.LabelJob:           j.ID,
		contract.LabelExperiment:    p.spec.Name,
		contract.LabelSpecHash:      p.spec.Hash,
		contract.LabelGPUs:          p.gpuLabel,
		contract.LabelClientVersion: version.Version,
		contract.LabelImage:         p.imageRef,
		contract.LabelMode:          p.mode,
		contract.LabelCodeHash:      p.code.Hash,
	}
	if p.timeout > 0 {
		labels[contract.LabelTimeout] = p.timeout.String()
	}
	if p.gpuIDs != "" {
		labels[gpus.LabelGPUIDs] = p.gpuIDs
	}
	for k, v := range p.labels {
		labels[k] = v
	}
	env = append(env,
		contract.EnvJobID+"="+j.ID,
		contract.EnvClientVersion+"="+version.Version,
		contract.EnvImageRef+"="+p.imageRef,
		contract.EnvImageDigest+"="+p.imageID,
		contract.EnvCodeHash+"="+p.code.Hash,
		contract.EnvMode+"="+p.mode,
	)
	if commit, dirty := run.Git(ctx, o.dir, p.spec.Include...); commit != "" {
		env = append(env, contract.EnvGitCommit+"="+commit)
		if dirty {
			env = append(env, contract.EnvGitDirty+"=1")
		}
	}
	cs := engine.ContainerSpec{
		Name:        j.ContainerName,
		Image:       p.imageRef,
		Env:         env,
		Labels:      labels,
		GPUs:        p.gpus,
		ShmBytes:    int64(p.spec.Resources.Shm),
		MemoryBytes: int64(p.spec.Resources.Memory),
		PidsLimit:   DefaultPidsLimit,
		// The job's code runs unprivileged unless asked otherwise; what it
		// writes goes to /xrun/{out,home,tmp}, owned by the job user.
		User:            contract.JobUser,
		Unprivileged:    true,
		NetworkDisabled: o.network == "none",
	}
	if o.root {
		cs.User, cs.Unprivileged = "", false
	} else {
		// The job user has no entry in the image's /etc/passwd; getpass
		// (torch.compile's cache, for one) reads these before asking it.
		cs.Env = append(cs.Env, "USER=xrun", "LOGNAME=xrun")
	}
	if cs.MemoryBytes == 0 {
		cs.MemoryBytes = defaultMemory(p.info.MemoryBytes)
	}
	if cs.ShmBytes == 0 {
		cs.ShmBytes = 1 << 30 // PyTorch DataLoader workers and NCCL need more than Docker's 64 MiB
	}
	done := a.step("create")
	id, err := p.eng.Create(ctx, cs)
	done()
	if err != nil {
		now := time.Now().UTC()
		j.Status, j.Error, j.Finished = result.StatusFailed, err.Error(), &now
		st.Save(j)
		if o.detach {
			releaseGPUs()
		}
		return err
	}
	j.ContainerID = id
	if err := st.Save(j); err != nil {
		return err
	}
	if err := a.copyCode(ctx, p, id); err != nil {
		a.discard(p.eng, j, err)
		if o.detach {
			releaseGPUs()
		}
		return err
	}
	if o.detach {
		if err := a.startDetached(ctx, p, j, o); err != nil {
			releaseGPUs()
			return err
		}
		return nil
	}
	return a.runAttached(ctx, p, j, o)
}

// prepare validates the spec, checks the host and builds (or finds) the image.
func (a *App) prepare(ctx context.Context, o submitOptions) (*prepared, error) {
	done := a.step("spec")
	s, err := spec.Load(o.dir)
	if err != nil {
		return nil, &ExitError{Code: ExitUsage, Err: err}
	}
	done()
	p := &prepared{spec: s, timeout: s.Resources.Timeout.Duration, mode: "gpu"}
	if o.timeout > 0 {
		p.timeout = o.timeout
	}
	if o.cpu {
		p.mode = "cpu"
		p.gpuLabel = "0"
	} else {
		g := s.Resources.GPUs
		if o.gpus != "" {
			if g, err = spec.ParseGPUs(o.gpus); err != nil {
				return nil, usageError("--gpus %q: %v", o.gpus, err)
			}
			if g.None() {
				return nil, usageError("--gpus %s asks for no GPU: pass --cpu to run without one, or --gpus device=0 for GPU 0", o.gpus)
			}
		}
		if g.None() {
			g.Count = 1
		}
		p.gpuLabel = g.String()
		switch {
		case g.All:
			p.gpus = &engine.GPURequest{Count: -1}
		case len(g.IDs) > 0:
			p.gpus = &engine.GPURequest{IDs: g.IDs}
		default:
			p.gpus = &engine.GPURequest{Count: g.Count}
		}
	}
	if p.labels, err = parseLabels(o.labels); err != nil {
		return nil, err
	}
	done = a.step("connect")
	if p.eng, err = a.Engine(ctx, o.host); err != nil {
		return nil, err
	}
	done()
	done = a.step("info")
	if p.info, err = p.eng.Info(ctx); err != nil {
		return nil, err
	}
	done()
	done = a.step("context")
	bctx, err := buildctx.Collect(o.dir, s, a.contextProgress())
	if err != nil {
		return nil, &ExitError{Code: ExitUsage, Err: err}
	}
	done()
	done = a.step("base")
	base, err := a.pickBase(ctx, p.eng, s.Image, o)
	if err != nil {
		return nil, err
	}
	done()
	if p.gpus != nil && !p.info.NvidiaRuntime {
		if err := probeGPU(ctx, p.eng, base, p.gpus); err != nil {
			return nil, err
		}
	}
	// The base's id is a label of the job image, so that a base remade
	// under the same tag changes the content hash and the image is rebuilt.
	baseID := ""
	if base != "scratch" {
		if baseID, err = p.eng.ImageID(ctx, base); err != nil {
			return nil, fmt.Errorf("inspect base image %s: %w", base, err)
		}
	}
	done = a.step("runner")
	runner, err := a.RunnerFor(ctx, p.info.OS, p.info.Arch, func(format string, args ...any) {
		fmt.Fprintf(a.Err, format+"\n", args...)
	})
	if err != nil {
		return nil, fmt.Errorf("get the runner for %s/%s: %w", p.info.OS, p.info.Arch, err)
	}
	done()
	df, err := dockerfile.Generate(dockerfile.Options{
		Base:       base,
		Apt:        s.Image.Apt,
		Python:     s.Image.Python,
		RunnerSrc:  "xrun-runner",
		Experiment: s.Name,
		Labels:     imageLabels(s, baseID, p.labels),
	})
	if err != nil {
		return nil, &ExitError{Code: ExitUsage, Err: err}
	}
	extras := []buildctx.Extra{
		{Name: "Dockerfile", Mode: 0o644, Data: df},
		{Name: "xrun-runner", Mode: 0o755, Src: runner},
	}
	extras = append(extras, dockerfile.Dirs()...)
	done = a.step("hash")
	p.code = bctx
	// The image holds all but the code, so a code edit reuses it.
	hash, err := buildctx.HashExtras(extras...)
	if err != nil {
		return nil, err
	}
	done()
	p.imageRef = "xrun/" + s.Name + ":" + hash[:12]
	done = a.step("image-exists")
	p.imageID, err = p.eng.ImageID(ctx, p.imageRef)
	done()
	if err == nil {
		fmt.Fprintf(a.Err, "image %s is on %s: build skipped\n", p.imageRef, p.eng.Host())
		return p, nil
	} else if !errors.Is(err, engine.ErrNotFound) {
		return nil, err
	}
	fmt.Fprintf(a.Err, "building %s on %s\n", p.imageRef, p.eng.Host())
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(buildctx.WriteExtras(pw, extras...)) }()
	p.imageID, err = p.eng.Build(ctx, pr, engine.BuildOptions{Tag: p.imageRef, NoCache: o.noCache}, func(line string) {
		fmt.Fprintln(a.Err, line)
	})
	pr.Close()
	if err != nil {
		if ctx.Err() != nil {
			return nil, &ExitError{Code: ExitInterrupted, Err: errors.New("interrupted during the image build")}
		}
		return nil, err
	}
	return p, nil
}

// copyCode puts the experiment's code at /xrun/exp of the created job
// container, as a hosted service mounts it: a code edit costs a copy, not an
// image build.
func (a *App) copyCode(ctx context.Context, p *prepared, id string) error {
	done := a.step("copy-code")
	defer done()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(p.code.WriteCode(pw)) }()
	err := p.eng.CopyTo(ctx, id, "/xrun", pr)
	pr.Close()
	if err != nil {
		return fmt.Errorf("copy the experiment's code (%d files, %s) into the job's container: %w", len(p.code.Files), units.HumanSize(float64(p.code.Bytes)), err)
	}
	return nil
}

// imageLabels are the image's labels. User labels go into the Dockerfile
// with xrun's own rather than as build labels: the classic builder would
// add them as one more step after the code layer, rebuilt on every edit.
func imageLabels(s *spec.Spec, baseID string, user map[string]string) map[string]string {
	labels := map[string]string{
		contract.LabelExperiment:    s.Name,
		contract.LabelSpecHash:      s.Hash,
		contract.LabelClientVersion: version.Version,
	}
	if baseID != "" {
		labels[contract.LabelBaseID] = baseID
	}
	for k, v := range user {
		labels[k] = v
	}
	return labels
}

// probeGPU starts a throwaway container with the job's GPU request. A
// daemon can serve GPU requests without a registered "nvidia" runtime (the
// nvidia-container-runtime-hook on its PATH is enough), so Info alone
// cannot say no; the start can, before a long build.
func probeGPU(ctx context.Context, e engine.Engine, base string, gpus *engine.GPURequest) error {
	id, err := e.Create(ctx, engine.ContainerSpec{
		Image: base, Entrypoint: []string{"true"}, GPUs: gpus,
		Labels: map[string]string{contract.LabelJob: "gpu-probe"}, NetworkDisabled: true,
	})
	if err != nil {
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		e.Remove(rctx, id, true)
	}()
	if err := e.Start(ctx, id); errors.Is(err, engine.ErrNoGPURuntime) || errors.Is(err, engine.ErrIncompleteGPURuntime) {
		return fmt.Errorf("host %s: %w", e.Host(), err)
	}
	// Any other failure (no "true" in a scratch base, no GPU free) is the
	// job's to report.
	return nil
}

// contextProgress reports the hashing of large contexts, and the large
// files going into them, on stderr.
func (a *App) contextProgress() *buildctx.Reporter {
	var last time.Time
	return &buildctx.Reporter{
		Progress: func(files int, bytes int64) {
			if bytes < 64<<20 || time.Since(last) < time.Second {
				return
			}
			last = time.Now()
			fmt.Fprintf(a.Err, "reading build context: %d files, %s\n", files, units.HumanSize(float64(bytes)))
		},
		Warn: func(msg string) { fmt.Fprintf(a.Err, "warning: %s\n", msg) },
	}
}

// pickBase resolves the base image and makes sure it is on the host. A
// CPU run of a spec that names no base, or a base of the table, takes any
// CPU base of the table that the host has (one made offline with
// images/make-cpu-base.sh) when the default CPU base is missing.
func (a *App) pickBase(ctx context.Context, e engine.Engine, img spec.Image, o submitOptions) (string, error) {
	if o.base != "" {
		return o.base, a.ensureBase(ctx, e, o.base)
	}
	base, err := images.Resolve(img, o.cpu)
	if err != nil {
		return "", &ExitError{Code: ExitUsage, Err: err}
	}
	if o.cpu && img.Torch == "" && img.CUDA == "" && (img.Base == "" || images.Named(img.Base)) {
		if ok, err := e.ImageExists(ctx, base); err != nil || ok {
			return base, err
		}
		for _, row := range images.Default().Images {
			if !row.CPU() || row.Ref == base {
				continue
			}
			if ok, _ := e.ImageExists(ctx, row.Ref); ok {
				fmt.Fprintf(a.Err, "default CPU base %s is not on %s: using %s\n", base, e.Host(), row.Ref)
				return row.Ref, nil
			}
		}
	}
	return base, a.ensureBase(ctx, e, base)
}

// ensureBase makes sure the base image is on the host, pulling it once;
// an offline host gets a sentence saying how to make the image instead.
func (a *App) ensureBase(ctx context.Context, e engine.Engine, base string) error {
	if base == "scratch" {
		return nil
	}
	ok, err := e.ImageExists(ctx, base)
	if err != nil || ok {
		return err
	}
	fmt.Fprintf(a.Err, "base image %s is not on %s: pulling it\n", base, e.Host())
	pctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := e.Pull(pctx, base, func(line string) { fmt.Fprintln(a.Err, line) }); err != nil {
		if ctx.Err() != nil {
			return &ExitError{Code: ExitInterrupted, Err: errors.New("interrupted while pulling the base image")}
		}
		how := "build it on that host from images/ (see images/README.md)"
		if row, ok := images.Lookup(base); ok {
			how = "build it on that host with `" + row.HowToMake() + "`"
		}
		return fmt.Errorf("base image %s is not on host %s and no registry is reachable (%s): %s, or make a CPU base with `images/make-cpu-base.sh` and submit with --cpu", base, e.Host(), firstLine(err.Error()), how)
	}
	return nil
}

// jobEnv is the spec's env names and --env, read from this shell at submit
// time: values go to the container, never into the image.
func (a *App) jobEnv(s *spec.Spec, flags []string) ([]string, error) {
	var env []string
	for _, name := range s.Env {
		if v, ok := lookupEnv(a.Getenv, name); ok {
			env = append(env, name+"="+v)
		} else {
			fmt.Fprintf(a.Err, "warning: %s lists env %s, which is not set here; the job runs without it\n", spec.FileName, name)
		}
	}
	for _, f := range flags {
		name, value, hasValue := strings.Cut(f, "=")
		if name == "" {
			return nil, usageError("--env %q: give NAME or NAME=value", f)
		}
		if !hasValue {
			v, ok := lookupEnv(a.Getenv, name)
			if !ok {
				return nil, usageError("--env %s: the variable is not set in this shell; set it or pass --env %s=value", name, name)
			}
			value = v
		}
		env = append(env, name+"="+value)
	}
	for _, name := range []string{contract.EnvPostURL, contract.EnvPostToken} {
		if v, ok := lookupEnv(a.Getenv, name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env, nil
}

func lookupEnv(getenv func(string) string, name string) (string, bool) {
	if getenv == nil {
		return os.LookupEnv(name)
	}
	v := getenv(name)
	return v, v != ""
}

func parseLabels(flags []string) (map[string]string, error) {
	labels := map[string]string{}
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, usageError("--label %q: give KEY=VALUE", f)
		}
		if strings.HasPrefix(k, "dev.xrun.") && k != "dev.xrun.test" {
			return nil, usageError("--label %s: the dev.xrun. prefix is xrun's own", k)
		}
		labels[k] = v
	}
	return labels, nil
}

// startDetached starts the job and prints its id.
func (a *App) startDetached(ctx context.Context, p *prepared, j *jobs.Job, o submitOptions) error {
	st, _ := a.Store()
	done := a.step("start")
	if err := p.eng.Start(ctx, j.ContainerID); err != nil {
		a.discard(p.eng, j, err)
		return err
	}
	done()
	j.Status = jobs.StatusRunning
	if err := st.Save(j); err != nil {
		return err
	}
	if o.json {
		return writeJSON(a.Out, j)
	}
	fmt.Fprintln(a.Out, j.ID)
	return nil
}

// discard removes a container that could not start and records why.
func (a *App) discard(e engine.Engine, j *jobs.Job, cause error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.Remove(ctx, j.ContainerID, true)
	if st, err := a.Store(); err == nil {
		now := time.Now().UTC()
		j.Status, j.Error, j.Finished = result.StatusFailed, cause.Error(), &now
		if j.StoppedBy != "" {
			j.Status = j.StoppedBy
		}
		st.Save(j)
	}
}

// runAttached starts the job, streams its logs, waits for it, copies its
// results back and prints them. Cancelling ctx (Ctrl-C) stops and removes
// the container.
func (a *App) runAttached(ctx context.Context, p *prepared, j *jobs.Job, o submitOptions) error {
	st, _ := a.Store()
	runCtx := ctx
	var cancelTimeout context.CancelFunc = func() {}
	if p.timeout > 0 {
		runCtx, cancelTimeout = context.WithTimeoutCause(ctx, p.timeout, errTimeout)
	}
	defer cancelTimeout()
	// Wait before Start, as docker run does: an exit can never be missed.
	waitC := p.eng.Wait(runCtx, j.ContainerID, true)
	if err := p.eng.Start(runCtx, j.ContainerID); err != nil {
		if ctx.Err() != nil { // Ctrl-C before the start: cancelled, not failed
			j.StoppedBy = result.StatusCancelled
			a.discard(p.eng, j, errors.New("interrupted before it started"))
			return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("job %s interrupted before it started", j.ID)}
		}
		a.discard(p.eng, j, err)
		return err
	}
	j.Status = jobs.StatusRunning
	st.Save(j)
	fmt.Fprintf(a.Err, "job %s running in container %s on %s\n", j.ID, j.ContainerName, p.eng.Host())
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		p.eng.Logs(runCtx, j.ContainerID, engine.LogOptions{Follow: true}, a.Err, a.Err)
	}()
	var res engine.WaitResult
	select {
	case res = <-waitC:
	case <-runCtx.Done():
	}
	if runCtx.Err() != nil {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopGrace+30*time.Second)
		defer cancel()
		if errors.Is(context.Cause(runCtx), errTimeout) {
			fmt.Fprintf(a.Err, "job %s ran past its timeout of %s: stopping it\n", j.ID, p.timeout)
			if err := a.expire(cleanup, p.eng, j); err != nil {
				return err
			}
			<-p.eng.Wait(cleanup, j.ContainerID, false)
			return a.finish(cleanup, p.eng, j, o, logsDone)
		}
		return a.interrupt(cleanup, p.eng, j)
	}
	if res.Err != nil {
		return res.Err
	}
	return a.finish(ctx, p.eng, j, o, logsDone)
}

var errTimeout = errors.New("job timeout")

// interrupt stops and removes the container of an attached job on Ctrl-C.
// The record says cancelled first; a second Ctrl-C (abortOf) cuts the
// graceful stop and the copy of the results short, and the container is
// killed and removed all the same.
func (a *App) interrupt(ctx context.Context, e engine.Engine, j *jobs.Job) error {
	st, _ := a.Store()
	fmt.Fprintf(a.Err, "\ninterrupted: stopping and removing container %s (Ctrl-C again to skip the graceful stop)\n", j.ContainerName)
	j.Status, j.StoppedBy = result.StatusCancelled, result.StatusCancelled
	st.Save(j)
	graceful, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-abortOf(ctx):
			cancel()
		case <-graceful.Done():
		}
	}()
	e.Stop(graceful, j.ContainerID, 2*time.Second)
	if c, err := e.Inspect(graceful, j.ContainerID); err == nil {
		a.finalize(graceful, e, j, c)
	}
	if graceful.Err() != nil && j.Finished == nil {
		now := time.Now().UTC()
		j.Finished = &now
		st.Save(j)
	}
	if err := e.Remove(ctx, j.ContainerID, true); err != nil && !errors.Is(err, engine.ErrNotFound) {
		return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("job %s interrupted, but removing its container failed: %w (remove it with `xrun rm %s`)", j.ID, err, j.ID)}
	}
	fmt.Fprintf(a.Err, "stopped and removed container %s of job %s\n", j.ContainerName, j.ID)
	return &ExitError{Code: ExitInterrupted}
}

// finish records the exited job, copies its results and prints them.
func (a *App) finish(ctx context.Context, e engine.Engine, j *jobs.Job, o submitOptions, logsDone <-chan struct{}) error {
	select {
	case <-logsDone:
	case <-time.After(5 * time.Second):
	}
	c, err := e.Inspect(ctx, j.ContainerID)
	if err != nil {
		return err
	}
	if err := a.finalize(ctx, e, j, c); err != nil {
		fmt.Fprintf(a.Err, "warning: %v\n", err)
	}
	if o.json {
		if err := writeJSON(a.Out, j); err != nil {
			return err
		}
	} else if err := a.printStoredResults(j, "text"); err != nil && j.Status == result.StatusSucceeded {
		return err
	}
	return jobOutcome(j)
}

// printStoredResults prints the job's results.json from the store.
func (a *App) printStoredResults(j *jobs.Job, format string) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	path := filepath.Join(st.Dir(j.ID), jobs.ResultsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("job %s has no results: %w", j.ID, err)
	}
	if format == "json" {
		_, err := a.Out.Write(data)
		return err
	}
	r, err := result.Decode(data)
	if err != nil {
		return fmt.Errorf("read results of job %s: %w", j.ID, err)
	}
	if format == "markdown" {
		return report.Markdown(a.Out, r)
	}
	return report.Text(a.Out, r)
}
