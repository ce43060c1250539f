package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/runner/contract"
	"github.com/xrun-dev/xrun/runner/profile"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/backend/dockerhost"
	"github.com/xrun-dev/xrun/client/backend/kube"
	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/client/lifecycle"
	"github.com/xrun-dev/xrun/client/submit"
	"github.com/xrun-dev/xrun/runner/report"
	"github.com/xrun-dev/xrun/runner/result"
	"github.com/xrun-dev/xrun/runner/spec"
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
	// profile asks the runner for Nsight Compute reports (runner/profile).
	profile string
	// registry is where a cluster's job image goes (--k8s).
	registry   string
	pullSecret string
}

func newSubmitCommand(a *App) *cli.Command {
	var o submitOptions
	return &cli.Command{
		Name:      "submit",
		Usage:     "build an experiment's image and run it as a job on a Docker host or a Kubernetes cluster",
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
  xrun submit --k8s --context lab --registry registry.lab:5000 --gpus 2 experiments/039-gla-pingpong

With --k8s the job runs as a Kubernetes Job on the cluster of the kubeconfig
(--context picks a context, --namespace a namespace): the image is built on the
Docker host (--host, default the local one), the code added as one layer, and
pushed to --registry, which the cluster pulls from. GPUs are nvidia.com/gpu
limits and gpu_type a node affinity; the cluster's scheduler places the job.
See docs/kubernetes.md.

Jobs run as uid 65532 without capabilities (--root to run as root; --root
with --profile adds CAP_SYS_ADMIN for Nsight Compute), with at most 8192
processes and threads, and a memory limit of resources.memory, else three
quarters of the host's memory. --env values are kept in the container's
configuration on the host until xrun rm removes it.`,
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
			&cli.StringFlag{Name: "profile", Usage: "after timing, profile with Nsight Compute: ncu (every implementation and case) or ncu:impl=a,b;case=0,2;set=full; the reports come back in the job's out/profile/ (runner/profile/README.md); with --root the job also gets CAP_SYS_ADMIN, which hosts that let only administrators read the GPU's counters require", Destination: &o.profile},
			&cli.StringFlag{Name: "registry", EnvVars: []string{"XRUN_K8S_REGISTRY"}, Usage: "with --k8s: the registry the cluster pulls job images from, HOST[:PORT][/PATH] (pushed with docker login's credentials)", Destination: &o.registry},
			&cli.StringFlag{Name: "pull-secret", EnvVars: []string{"XRUN_K8S_PULL_SECRET"}, Usage: "with --k8s: a docker-registry secret of the namespace for pulling the job image", Destination: &o.pullSecret},
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
			o.host.kubeSelection()
			if o.host.K8s {
				if len(o.hosts) > 1 {
					return usageError("--k8s runs on one cluster: give at most one --host (the Docker host that builds the image)")
				}
			}
			if len(o.hosts) > 1 {
				return runSubmitFanout(c.Context, a, o, o.hosts)
			}
			return runSubmit(c.Context, a, o)
		},
	}
}

// rerunArgs are the options a rerun of the job repeats (jobs.SubmitArgs):
// the names of --env variables, never their values.
func (o submitOptions) rerunArgs() *jobs.SubmitArgs {
	r := &jobs.SubmitArgs{Base: o.base, Labels: o.labels, Root: o.root, Network: o.network}
	for _, e := range o.env {
		name, _, _ := strings.Cut(e, "=")
		r.Env = append(r.Env, name)
	}
	return r
}

func (o submitOptions) submitOptions(labels map[string]string) submit.Options {
	return submit.Options{Dir: o.dir, GPUs: o.gpus, CPU: o.cpu, Timeout: o.timeout, Base: o.base, NoCache: o.noCache, Labels: labels}
}

func runSubmit(ctx context.Context, a *App, o submitOptions) error {
	if o.timeout < 0 {
		return usageError("--timeout %s: give a duration > 0 (or leave it out for resources.timeout)", o.timeout)
	}
	labels, err := parseLabels(o.labels)
	if err != nil {
		return err
	}
	so := o.submitOptions(labels)
	if o.profile != "" {
		if _, err := profile.Parse(o.profile); err != nil {
			return usageError("--profile %q: %v", o.profile, err)
		}
		if o.cpu {
			return usageError("--profile profiles GPU kernels: leave out --cpu")
		}
	}
	done := a.step("spec")
	p, err := submit.Load(so)
	if err != nil {
		return err
	}
	done()
	// --env is read before the connection and the build, which take minutes.
	env, err := a.jobEnv(p.Spec, o.env)
	if err != nil {
		return err
	}
	if o.host.K8s && o.network != "default" {
		return usageError("--network %s does not apply with --k8s: a NetworkPolicy of the namespace decides the job's network", o.network)
	}
	if o.host.K8s && p.GPUs != nil && (len(p.GPUs.IDs) > 0 || p.GPUs.Count < 0) {
		return usageError("--gpus %s does not apply with --k8s: the scheduler picks the GPUs; give a count", p.GPULabel)
	}
	done = a.step("connect")
	// A cluster's job image is built on the Docker host (--host, default
	// the local one) and pushed to the cluster's registry.
	builderSel := o.host
	var kb *kube.Backend
	if o.host.K8s {
		if kb, err = a.kubeBackend(ctx, o.host.Kube); err != nil {
			return interruptedBeforeJob(ctx, err)
		}
	}
	e, err := a.Engine(ctx, builderSel)
	if err != nil {
		return interruptedBeforeJob(ctx, err)
	}
	done()
	builder := &submit.Builder{Engine: e, Log: a.Err, RunnerFor: a.RunnerFor, Step: a.step, ProbeGPUs: !o.host.K8s}
	if err := builder.Build(ctx, p, so); err != nil {
		return interruptedBeforeJob(ctx, err)
	}
	if o.profile != "" {
		env = append(env, contract.EnvProfile+"="+o.profile)
	}
	st, err := a.Store()
	if err != nil {
		return err
	}
	var b backend.Backend = dockerhost.New(e)
	jo := submit.JobOptions{Env: env, Root: o.root, NoNetwork: o.network == "none", HostMemory: p.Info.MemoryBytes}
	if _, hasURL := lookupEnv(a.Getenv, contract.EnvPostURL); hasURL {
		jo.PostToken, _ = lookupEnv(a.Getenv, contract.EnvPostToken)
	}
	if o.profile != "" && o.root {
		// Nsight Compute reads the GPU's counters; where the driver lets
		// only administrators, root needs this capability too.
		jo.CapAdd = []string{profile.AdminCapability}
	}
	if kb != nil {
		kb.Builder, kb.Registry, kb.PullSecret = e, o.registry, o.pullSecret
		b, jo.HostMemory = kb, 0
	}
	j := submit.NewJob(p, b.Where(), o.dir)
	j.Submit = o.rerunArgs()
	if err := st.Create(j); err != nil {
		return err
	}
	if a.onJob != nil {
		a.onJob(j)
	}
	releaseGPUs := func() {}
	if kb == nil {
		if releaseGPUs, err = a.assignGPUs(ctx, p, e, j, o.host, o.queue); err != nil {
			if ctx.Err() != nil {
				return a.cancelBeforeStart(b, j)
			}
			now := time.Now().UTC()
			j.Status, j.Error, j.Finished = result.StatusFailed, err.Error(), &now
			st.Save(j)
			return err
		}
	}
	if p.GPUIDs != "" {
		j.GPUs = p.GPUIDs
	}
	if !o.detach {
		defer releaseGPUs()
	}
	js := p.JobSpec(ctx, j, o.dir, jo)
	if err := a.create(ctx, b, j, js); err != nil {
		if o.detach {
			releaseGPUs()
		}
		return err
	}
	if o.detach {
		if err := a.startDetached(ctx, b, j, o); err != nil {
			releaseGPUs()
			return err
		}
		return nil
	}
	return a.runAttached(ctx, b, j, o)
}

// create makes the job on its backend and records it; a job that could
// not be created is recorded as failed, one whose create Ctrl-C cut short
// as cancelled.
func (a *App) create(ctx context.Context, b backend.Backend, j *jobs.Job, js backend.Spec) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	done := a.step("create")
	err = b.Create(ctx, j, js)
	done()
	if err != nil {
		if ctx.Err() != nil {
			// The error is the cancelled request's; the backend removed
			// what the create made, and discard removes it again when
			// the record knows it.
			return a.cancelBeforeStart(b, j)
		}
		if j.ContainerID != "" {
			a.discard(b, j, err)
			return err
		}
		now := time.Now().UTC()
		j.Status, j.Error, j.Finished = result.StatusFailed, err.Error(), &now
		st.Save(j)
		return err
	}
	return st.Save(j)
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
		if !envName.MatchString(name) {
			return nil, usageError("--env %q: give NAME or NAME=value, NAME of letters, digits and _ (not starting with a digit)", f)
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
	// The POST token is not among them: it goes to the runner alone
	// (backend.Spec.PostToken).
	if v, ok := lookupEnv(a.Getenv, contract.EnvPostURL); ok {
		env = append(env, contract.EnvPostURL+"="+v)
	}
	return env, nil
}

// envName is a variable name a shell can set and a program can read.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

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
func (a *App) startDetached(ctx context.Context, b backend.Backend, j *jobs.Job, o submitOptions) error {
	st, _ := a.Store()
	done := a.step("start")
	if err := b.Start(ctx, j); err != nil {
		if ctx.Err() != nil {
			return a.cancelBeforeStart(b, j)
		}
		a.discard(b, j, err)
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

// discard removes a job that could not start and records why.
func (a *App) discard(b backend.Backend, j *jobs.Job, cause error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if j.ContainerID != "" {
		b.Remove(ctx, j, true)
	}
	if st, err := a.Store(); err == nil {
		now := time.Now().UTC()
		j.Status, j.Error, j.Finished = result.StatusFailed, cause.Error(), &now
		if j.StoppedBy != "" {
			j.Status = j.StoppedBy
		}
		st.Save(j)
	}
}

// cancelBeforeStart records job j, which Ctrl-C stopped before it ran, as
// cancelled, removes what the backend has of it, and returns the error
// xrun exits with: 130, as after a Ctrl-C of a running job.
func (a *App) cancelBeforeStart(b backend.Backend, j *jobs.Job) error {
	j.StoppedBy = result.StatusCancelled
	a.discard(b, j, errors.New("interrupted before it started"))
	return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("job %s interrupted before it started", j.ID)}
}

// interruptedBeforeJob is err, or, when Ctrl-C ended ctx, the error of a
// submit interrupted before it recorded a job (nothing to clean up): the
// cancelled request's own error says nothing useful. Errors that carry
// their exit code already (an interrupted build or pull) stay.
func interruptedBeforeJob(ctx context.Context, err error) error {
	var ee *ExitError
	if ctx.Err() == nil || errors.As(err, &ee) {
		return err
	}
	return &ExitError{Code: ExitInterrupted, Err: errors.New("interrupted before the job was created")}
}

// runAttached starts the job, streams its logs, waits for it, copies its
// results back and prints them. Cancelling ctx (Ctrl-C) stops and removes
// the job.
func (a *App) runAttached(ctx context.Context, b backend.Backend, j *jobs.Job, o submitOptions) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	if err := b.Start(ctx, j); err != nil {
		if ctx.Err() != nil { // Ctrl-C before the start: cancelled, not failed
			return a.cancelBeforeStart(b, j)
		}
		a.discard(b, j, err)
		return err
	}
	j.Status = jobs.StatusRunning
	st.Save(j)
	fmt.Fprintf(a.Err, "job %s running in %s on %s\n", j.ID, handle(b, j), b.Where())
	logsCtx, stopLogs := context.WithCancel(ctx)
	defer stopLogs()
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		b.Logs(logsCtx, j, backend.LogOptions{Follow: true}, a.Err, a.Err)
	}()
	s, err := b.State(ctx, j)
	if err == nil && !s.Finished() {
		err = a.waitJob(ctx, b, st, j, s)
	}
	if ctx.Err() != nil {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), lifecycle.StopGrace+30*time.Second)
		defer cancel()
		return a.interrupt(WithAbort(cleanup, abortOf(ctx)), b, j)
	}
	if err != nil && !errors.Is(err, backend.ErrNotFound) {
		return err
	}
	return a.finish(ctx, b, j, o, logsDone)
}

// interrupt stops and removes the job of an attached submit on Ctrl-C.
// The record says cancelled first; a second Ctrl-C (abortOf) cuts the
// graceful stop and the copy of the results short, and the job is
// killed and removed all the same.
func (a *App) interrupt(ctx context.Context, b backend.Backend, j *jobs.Job) error {
	st, _ := a.Store()
	fmt.Fprintf(a.Err, "\ninterrupted: stopping and removing %s (Ctrl-C again to skip the graceful stop)\n", handle(b, j))
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
	b.Stop(graceful, j, 2*time.Second)
	if s, err := b.State(graceful, j); err == nil {
		lifecycle.Finalize(graceful, b, st, j, s)
	}
	if graceful.Err() != nil && j.Finished == nil {
		now := time.Now().UTC()
		j.Finished = &now
		st.Save(j)
	}
	if err := b.Remove(ctx, j, true); err != nil && !errors.Is(err, backend.ErrNotFound) {
		return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("job %s interrupted, but removing it failed: %w (remove it with `xrun rm %s`)", j.ID, err, j.ID)}
	}
	fmt.Fprintf(a.Err, "stopped and removed %s of job %s\n", handle(b, j), j.ID)
	return &ExitError{Code: ExitInterrupted}
}

// finish records the exited job, copies its results and prints them.
func (a *App) finish(ctx context.Context, b backend.Backend, j *jobs.Job, o submitOptions, logsDone <-chan struct{}) error {
	select {
	case <-logsDone:
	case <-time.After(5 * time.Second):
	}
	if !jobs.Final(j.Status) || j.Finished == nil {
		st, err := a.Store()
		if err != nil {
			return err
		}
		s, err := b.State(ctx, j)
		if err != nil {
			return err
		}
		if err := lifecycle.Finalize(ctx, b, st, j, s); err != nil {
			// The job ended, but nothing says how until its results are
			// in the store (a full disk): the next look copies them.
			return &ExitError{Code: ExitInfra, Err: err}
		}
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

// handle names what runs job j on b: "container NAME" on a Docker host,
// "Job NAME" on a cluster.
func handle(b backend.Backend, j *jobs.Job) string {
	if kube.IsRef(b.Where()) {
		return "Job " + j.ContainerName
	}
	return "container " + j.ContainerName
}
