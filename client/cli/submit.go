package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/runner/contract"
	"github.com/xrun-dev/xrun/runner/profile"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/backends"
	"github.com/xrun-dev/xrun/client/exit"
	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/client/submit"
	"github.com/xrun-dev/xrun/runner/report"
	"github.com/xrun-dev/xrun/runner/result"
	"github.com/xrun-dev/xrun/runner/run"
	"github.com/xrun-dev/xrun/runner/spec"
)

type submitOptions struct {
	dir     string
	host    backends.Selection
	detach  bool
	gpus    string
	cpu     bool
	keep    bool
	quiet   bool
	env     []string
	timeout time.Duration
	base    string
	json    bool
	labels  []string
	noCache bool
	verbose bool
	// noPreflight leaves the check of the spec's module:function
	// references to the container (preflight).
	noPreflight bool
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
	// noCacheVolume keeps the compile caches in the job's own container.
	noCacheVolume bool
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
back into the job store, removes the exited container once the results and logs
are stored (--keep keeps it), prints the results table on stdout and exits with
the job's status. Ctrl-C stops the container gracefully and removes it; a second
Ctrl-C kills and removes it at once; a third exits without waiting.

Exit codes (the runner's, with xrun's own failures in the same places):
  0    succeeded; also when every implementation was skipped here (a GPU
       experiment with --cpu): the table then says "nothing compared: ..."
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
configuration on the host until the container is removed (at the end of an
attached run without --keep, else by xrun rm).

When stdout is closed during an attached submit (xrun submit DIR | head -3), xrun
says once on stderr that the job goes on detached and how to follow it (xrun
logs -f ID), and exits 0: the job was not asked to stop.`,
		Flags: append(hostFlags(&o.host),
			&cli.BoolFlag{Name: "detach", Aliases: []string{"d"}, Usage: "print the job id and return once the job is running", Destination: &o.detach},
			&cli.StringFlag{Name: "gpus", EnvVars: []string{"XRUN_GPUS"}, Usage: "GPUs to request: a count, device ids (device=0, 0,2 or GPU-uuid) or all (default: resources.gpus, else 1)", Destination: &o.gpus},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "for scripts: no build or log output on stderr (errors still), and on stdout only the job id (-d) or, attached, one line: the job id and its final status", Destination: &o.quiet},
			&cli.BoolFlag{Name: "keep", Usage: "attached: keep the job's exited container on the host (by default it is removed once its results and logs are in the store)", Destination: &o.keep},
			&cli.BoolFlag{Name: "queue", EnvVars: []string{"XRUN_QUEUE"}, Usage: "when the GPUs asked for are held by other jobs, wait for them instead of failing", Destination: &o.queue},
			&cli.BoolFlag{Name: "cpu", EnvVars: []string{"XRUN_CPU"}, Usage: "run without GPUs (XRUN_MODE=cpu: the CPU sweep, GPU-only implementations skipped)", Destination: &o.cpu},
			&cli.StringSliceFlag{Name: "env", Aliases: []string{"e"}, Usage: "pass host variable NAME (or NAME=value) to the job at run time, added to the spec's env list"},
			&cli.DurationFlag{Name: "timeout", EnvVars: []string{"XRUN_TIMEOUT"}, Usage: "stop the job after this long", DefaultText: "resources.timeout", Destination: &o.timeout},
			&cli.StringFlag{Name: "base", EnvVars: []string{"XRUN_BASE"}, Usage: "base image reference, instead of the one image.base resolves to", Destination: &o.base},
			&cli.BoolFlag{Name: "json", Usage: "print the job record (attached: after it ends) as JSON on stdout", Destination: &o.json},
			&cli.StringSliceFlag{Name: "label", Usage: "add label KEY=VALUE to the job's image and container"},
			&cli.BoolFlag{Name: "verbose", Usage: "print the image build's output in full (default: a line per step; the full output is the job's build.log, and is printed when the build fails)", Destination: &o.verbose},
			&cli.BoolFlag{Name: "no-preflight", EnvVars: []string{"XRUN_NO_PREFLIGHT"}, Usage: "do not check the spec's module:function references with this machine's python3 before the build (the container checks them all the same)", Destination: &o.noPreflight},
			&cli.BoolFlag{Name: "no-cache", Usage: "rebuild every layer of the image", Destination: &o.noCache},
			&cli.BoolFlag{Name: "root", EnvVars: []string{"XRUN_ROOT"}, Usage: "run the job as root with Docker's default capabilities (default: uid 65532, no capabilities, no-new-privileges)", Destination: &o.root},
			&cli.StringFlag{Name: "network", EnvVars: []string{"XRUN_NETWORK"}, Value: "default", Usage: "the job's network: default (the daemon's bridge) or none", Destination: &o.network},
			&cli.StringFlag{Name: "profile", Usage: "after timing, profile with Nsight Compute: ncu (every implementation and case) or ncu:impl=a,b;case=0,2;set=full; the reports come back in the job's out/profile/ (runner/profile/README.md); with --root the job also gets CAP_SYS_ADMIN, which hosts that let only administrators read the GPU's counters require", Destination: &o.profile},
			&cli.StringFlag{Name: "registry", EnvVars: []string{"XRUN_K8S_REGISTRY"}, Usage: "with --k8s: the registry the cluster pulls job images from, HOST[:PORT][/PATH] (pushed with docker login's credentials)", Destination: &o.registry},
			&cli.BoolFlag{Name: "no-cache-volume", EnvVars: []string{"XRUN_NO_CACHE_VOLUME"}, Usage: "start the job with empty compile caches (Triton, TorchInductor, CUDA extensions) instead of the host's cache volume of this experiment, base and GPU model", Destination: &o.noCacheVolume},
			&cli.StringFlag{Name: "pull-secret", EnvVars: []string{"XRUN_K8S_PULL_SECRET"}, Usage: "with --k8s: a docker-registry secret of the namespace for pulling the job image", Destination: &o.pullSecret},
		),
		BashComplete: completeDirs,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("submit takes one experiment directory, got %d arguments (see xrun submit --help)", c.NArg())
			}
			o.dir = c.Args().First()
			if o.quiet && o.json {
				return usageError("--quiet and --json both say what stdout gets: give one")
			}
			if o.network != "default" && o.network != "none" {
				return usageError("--network %q: give default or none", o.network)
			}
			o.env = c.StringSlice("env")
			o.labels = c.StringSlice("label")
			o.hosts = c.StringSlice("host")
			if len(o.hosts) > 0 {
				o.host.Host = o.hosts[0]
			}
			o.host.MoveContextToKube()
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
	return submit.Options{Dir: o.dir, GPUs: o.gpus, CPU: o.cpu, Timeout: o.timeout, Base: o.base, NoCache: o.noCache, Verbose: o.verbose, Labels: labels}
}

func runSubmit(ctx context.Context, a *App, o submitOptions) error {
	r, err := a.submitRequest(o)
	if err != nil {
		return err
	}
	if !o.noPreflight {
		if err := preflight(ctx, r.Prepared, o.dir); err != nil {
			return err
		}
	}
	m, err := a.Jobs()
	if err != nil {
		return err
	}
	if o.quiet {
		m.Err = io.Discard
	}
	if !o.detach && a.StdoutClosed != nil {
		m.Detach = a.StdoutClosed()
	}
	j, err := m.Submit(ctx, r)
	if errors.Is(err, job.ErrDetached) {
		// Whoever read stdout has stopped; the job was not asked to.
		return nil
	}
	if err != nil {
		// A job that was recorded and then failed to start, was interrupted
		// or could not be finished has a record all the same: --json prints
		// it, so that a script learns the job's id and how it ended.
		if o.json && j != nil {
			writeJSON(a.Out, j)
		}
		return err
	}
	switch {
	case o.quiet && !o.detach:
		fmt.Fprintf(a.Out, "%s %s\n", j.ID, j.Status)
	case o.json:
		if err := writeJSON(a.Out, j); err != nil {
			return err
		}
	case o.detach:
		fmt.Fprintln(a.Out, j.ID)
		return nil
	default:
		// The run's error was streamed in the log just now: the table and
		// xrun's last line point to it rather than say it again.
		inLog := a.errorInLog(j)
		err := a.printSubmitResults(j, inLog)
		if err != nil && j.Status == result.StatusSucceeded {
			return err
		}
		// On one terminal the table just listed what failed.
		if inLog || err == nil && a.OutTTY != nil && a.ErrTTY != nil {
			return job.OutcomeShown(j)
		}
	}
	if o.detach {
		return nil
	}
	return job.Outcome(j)
}

// preflightTimeout bounds the check of references on this machine.
const preflightTimeout = 10 * time.Second

// preflight checks the spec's module:function references with this
// machine's python3 before anything is built: a misspelt function is
// found in a second rather than after the build and the container's start.
// The experiment's modules are parsed, not imported: none of its code runs
// here. Without a python3, or when the check cannot run, the container's
// check is the only one.
func preflight(ctx context.Context, p *submit.Prepared, dir string) error {
	py, err := exec.LookPath("python3")
	if err != nil {
		return nil
	}
	if _, err := run.CheckRefsOnHost(ctx, p.Spec, dir, py, preflightTimeout); err != nil {
		return exit.BadInput(fmt.Errorf("%w\n(found before the build by this machine's python3, which parses the experiment's modules without running them; --no-preflight skips this check)", err))
	}
	return nil
}

// submitRequest checks a submit's options, loads its spec and reads its
// environment, before any connection or build: every mistake of the
// command line is found in a second, not after minutes of building.
func (a *App) submitRequest(o submitOptions) (job.SubmitRequest, error) {
	var r job.SubmitRequest
	if o.timeout < 0 {
		return r, usageError("--timeout %s: give a duration > 0 (or leave it out for resources.timeout)", o.timeout)
	}
	labels, err := parseLabels(o.labels)
	if err != nil {
		return r, err
	}
	so := o.submitOptions(labels)
	if o.profile != "" {
		if _, err := profile.Parse(o.profile); err != nil {
			return r, usageError("--profile %q: %v", o.profile, err)
		}
		if o.cpu {
			return r, usageError("--profile profiles GPU kernels: leave out --cpu")
		}
	}
	if o.cpu && o.gpus != "" {
		return r, usageError("--cpu runs without GPUs: leave out --gpus %s (or --cpu)", o.gpus)
	}
	if o.host.K8s && o.network != "default" {
		return r, usageError("--network %s does not apply with --k8s: a NetworkPolicy of the namespace decides the job's network", o.network)
	}
	p, err := submit.Load(so)
	if err != nil {
		return r, err
	}
	// --env is read before the connection and the build, which take minutes.
	env, err := a.jobEnv(p.Spec, o.env)
	if err != nil {
		return r, err
	}
	if o.host.K8s && p.GPUs != nil && (len(p.GPUs.IDs) > 0 || p.GPUs.Count < 0) {
		return r, usageError("--gpus %s does not apply with --k8s: the scheduler picks the GPUs; give a count", p.GPULabel)
	}
	if o.profile != "" {
		env = append(env, contract.EnvProfile+"="+o.profile)
	}
	jo := submit.JobOptions{Env: env, Root: o.root, NoNetwork: o.network == "none"}
	if _, hasURL := lookupEnv(a.Getenv, contract.EnvPostURL); hasURL {
		jo.PostToken, _ = lookupEnv(a.Getenv, contract.EnvPostToken)
	}
	if o.profile != "" && o.root {
		// Nsight Compute reads the GPU's counters; where the driver lets
		// only administrators, root needs this capability too.
		jo.CapAdd = []string{profile.AdminCapability}
	}
	return job.SubmitRequest{
		Prepared: p, Build: so, Where: o.host, Registry: o.registry, PullSecret: o.pullSecret,
		Job: jo, Detach: o.detach, Queue: o.queue, Keep: o.keep, Rerun: o.rerunArgs(), NoCacheVolume: o.noCacheVolume,
	}, nil
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

// errorInLog says whether job j's error is a line of its stored log, as
// the runner logs it ("error: ..."): the attached submit showed it there.
func (a *App) errorInLog(j *jobs.Job) bool {
	if j.Error == "" {
		return false
	}
	st, err := a.Store()
	if err != nil {
		return false
	}
	data, err := os.ReadFile(filepath.Join(st.Dir(j.ID), jobs.LogsFile))
	first, _, _ := strings.Cut(strings.TrimSpace(j.Error), "\n")
	return err == nil && strings.Contains(string(data), " error: "+first)
}

// printSubmitResults prints an attached submit's results table; with
// errorShown the run's error, which the log on the same screen just said,
// is pointed to rather than repeated (on a terminal; a file or a pipe
// gets the whole table).
func (a *App) printSubmitResults(j *jobs.Job, errorShown bool) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(st.Dir(j.ID), jobs.ResultsFile))
	if err != nil {
		return fmt.Errorf("job %s has no results: %w", j.ID, err)
	}
	r, err := result.Decode(data)
	if err != nil {
		return fmt.Errorf("read results of job %s: %w", j.ID, err)
	}
	shownHere := errorShown && a.OutTTY != nil && a.ErrTTY != nil
	return report.TextWith(a.Out, r, report.TextOptions{ErrorShown: shownHere})
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
