package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/flat"
	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

type submitOptions struct {
	// Args are what the job is asked for; the rest is how this command
	// prints.
	job.Args
	quiet bool
	json  bool
	// noPreflight leaves the check of the spec's module:function
	// references to the container (job.Preflight).
	noPreflight bool
	// hosts are every --host given: more than one fans out.
	hosts []string
	// split is --split: the sweep's cases split over this many jobs.
	split int
	// cluster is what the flags say of a cluster beyond --host and
	// --context (its backend's own options).
	cluster *connect.SubmitChoice
}

func newSubmitCommand(a *App) *cli.Command {
	o := submitOptions{cluster: connect.NewSubmitChoice()}
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

With --split N the sweep's cases are split over N jobs submitted at once, the
Kth running cases K, K+N, K+2N, ... (from 1). Each is an ordinary job (xrun ps
lists them, "part K/N"); once all have ended their results are gathered into
one job, whose id the submit prints: its results are the whole sweep's, in its
order, judged by the criteria as one run's, and its log is the parts' logs. An
attached submit waits for the parts and gathers them (Ctrl-C cancels them all
and gathers what they ran); with --detach, xrun wait ID does. The parts must
run on one kind of machine (GPU model, driver, CUDA, software and clock
policy), as a series of the results history does. On a Docker host with fewer
free GPUs than parts, add --queue.

Examples:
  xrun submit --cpu experiments/039-gla-pingpong
  id=$(xrun submit -d --gpus 1 experiments/039-gla-pingpong) && xrun wait $id
  xrun submit --host ssh://me@gpu-box --gpus 0,2 --env HF_TOKEN experiments/039-gla-pingpong
  xrun submit --gpus device=1 experiments/039-gla-pingpong                 # GPU 1 only
  xrun submit --host lab --host cloud --queue experiments/039-gla-pingpong   # on both at once
  xrun submit --slurm --login me@cluster --split 4 experiments/039-gla-pingpong  # 4 nodes at once
  xrun submit --base xrun/cpu-torch:bookworm --timeout 10m my-kernel
  xrun submit --retune experiments/autotuned-matmul          # autotune afresh
  ` + strings.Join(connect.SubmitExamples(), "\n  ") + `

` + connect.SubmitHelp() + `

Jobs run as uid 65532 without capabilities (--root to run as root; --root
with --profile adds CAP_SYS_ADMIN for Nsight Compute), with at most 8192
processes and threads, and a memory limit of resources.memory, else three
quarters of the host's memory. --env values are kept in the container's
configuration on the host until the container is removed (at the end of an
attached run without --keep, else by xrun rm).

On a Docker host an attached submit, once its job ends, leaves a standby for
the experiment's next submit: a container of the same image and settings whose
runner has imported numpy, torch and triton and waits (15 minutes at most) for
its job. The next submit with the same spec, image, environment and GPUs runs
in it ("standby: waited ..." in its log) and skips the container's start and
those imports. It holds no GPU while it waits, xrun ps does not list it, and
xrun prune removes it; --no-standby (XRUN_NO_STANDBY=1) neither uses nor leaves
one.

With a server: in xrun's config (url, and token or token_file), the job's
runner posts its results.json to that xrun serve when the job ends, with the
post token (docs/server.md); XRUN_POST_URL and XRUN_POST_TOKEN in this shell
win over it.

When stdout is closed during an attached submit (xrun submit DIR | head -3), xrun
says once on stderr that the job goes on detached and how to follow it (xrun
logs -f ID), and exits 0: the job was not asked to stop.`,
		Flags: append(append(hostFlags(&o.Where),
			&cli.BoolFlag{Name: "detach", Aliases: []string{"d"}, Usage: "print the job id and return once the job is running", Destination: &o.Detach},
			&cli.StringFlag{Name: "gpus", EnvVars: []string{"XRUN_GPUS"}, Usage: "GPUs to request: a count, device ids (device=0, 0,2 or GPU-uuid) or all (default: resources.gpus, else 1)", Destination: &o.GPUs},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "for scripts: no build or log output on stderr (errors still), and on stdout only the job id (-d) or, attached, one line: the job id and its final status", Destination: &o.quiet},
			&cli.BoolFlag{Name: "keep", Usage: "attached: keep the job's exited container on the host (by default it is removed once its results and logs are in the store)", Destination: &o.Keep},
			&cli.IntFlag{Name: "split", Usage: "split the sweep over N jobs that run at once, each every Nth case (on a cluster, on as many nodes as the scheduler gives), and gather their results into one job", Destination: &o.split},
			&cli.BoolFlag{Name: "queue", EnvVars: []string{"XRUN_QUEUE"}, Usage: "when the GPUs asked for are held by other jobs, wait for them instead of failing", Destination: &o.Queue},
			&cli.BoolFlag{Name: "cpu", EnvVars: []string{"XRUN_CPU"}, Usage: "run without GPUs (XRUN_MODE=cpu: the CPU sweep, GPU-only implementations skipped)", Destination: &o.CPU},
			&cli.StringSliceFlag{Name: "env", Aliases: []string{"e"}, Usage: "pass host variable NAME (or NAME=value) to the job at run time, added to the spec's env list"},
			&cli.IntFlag{Name: "cpus", EnvVars: []string{"XRUN_CPUS"}, Usage: "CPUs of the job's own: on a Docker host, this many of its CPUs reserved for the job alone (default: resources.cpus, else a GPU job's share of the host; a CPU job runs on the CPUs no job reserved); with --slurm, sbatch --cpus-per-task; with --k8s, the pod's CPU request and limit", DefaultText: "resources.cpus", Destination: &o.CPUs},
			&cli.DurationFlag{Name: "timeout", EnvVars: []string{"XRUN_TIMEOUT"}, Usage: "stop the job after this long", DefaultText: "resources.timeout", Destination: &o.Timeout},
			&cli.StringFlag{Name: "base", EnvVars: []string{"XRUN_BASE"}, Usage: "base image reference, instead of the one image.base resolves to", Destination: &o.Base},
			&cli.BoolFlag{Name: "json", Usage: "print the job record (attached: after it ends) as JSON on stdout", Destination: &o.json},
			&cli.StringSliceFlag{Name: "label", Usage: "add label KEY=VALUE to the job's image and container"},
			&cli.BoolFlag{Name: "verbose", Usage: "print the image build's output in full (default: a line per step; the full output is the job's build.log, and is printed when the build fails)", Destination: &o.Verbose},
			&cli.BoolFlag{Name: "no-preflight", EnvVars: []string{"XRUN_NO_PREFLIGHT"}, Usage: "do not check the spec's module:function references with this machine's python3 before the build (the container checks them all the same)", Destination: &o.noPreflight},
			&cli.BoolFlag{Name: "no-cache", Usage: "rebuild every layer of the image", Destination: &o.NoCache},
			&cli.BoolFlag{Name: "root", EnvVars: []string{"XRUN_ROOT"}, Usage: "run the job as root with Docker's default capabilities (default: uid 65532, no capabilities, no-new-privileges)", Destination: &o.Root},
			&cli.StringFlag{Name: "network", EnvVars: []string{"XRUN_NETWORK"}, Value: "default", Usage: "the job's network: default (the daemon's bridge) or none", Destination: &o.Network},
			&cli.StringFlag{Name: "profile", Usage: "after timing, profile with Nsight Compute: ncu (every implementation and case) or ncu:impl=a,b;case=0,2;set=full; the reports come back in the job's out/profile/ (runner/profile/README.md); with --root the job also gets CAP_SYS_ADMIN, which hosts that let only administrators read the GPU's counters require", Destination: &o.Profile},
			&cli.StringFlag{Name: "cache-limit", EnvVars: []string{"XRUN_CACHE_LIMIT"}, Value: "10GiB", Usage: "the most the compile-cache volume may hold as the job starts: its least recently used entries over it are removed first (`SIZE`, 0: no limit)", Destination: &o.CacheLimit},
			&cli.BoolFlag{Name: "no-cache-volume", EnvVars: []string{"XRUN_NO_CACHE_VOLUME"}, Usage: "start the job with empty compile caches (Triton, TorchInductor, CUDA extensions) instead of the host's cache volume of your jobs of this experiment, base and GPU model (with --k8s: the node's directory)", Destination: &o.NoCacheVolume},
			&cli.BoolFlag{Name: "retune", EnvVars: []string{"XRUN_RETUNE"}, Usage: "time every autotuned Triton kernel's configs afresh, instead of reading the configs an earlier run of the same code stored in the compile-cache volume, and store the new choices (the spec's benchmark.method.retune does it for every run)", Destination: &o.Retune},
			&cli.BoolFlag{Name: "no-standby", EnvVars: []string{"XRUN_NO_STANDBY"}, Usage: "on a Docker host, neither run the job in the standby container a previous submit of this experiment left (Python and torch already imported) nor leave one for the next submit", Destination: &o.NoStandby},
		), optionFlags(o.cluster.Options())...),
		BashComplete: completeDirs,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("submit takes one experiment directory, got %d arguments (see xrun submit --help)", c.NArg())
			}
			o.Dir = c.Args().First()
			if o.quiet && o.json {
				return usageError("--quiet and --json both say what stdout gets: give one")
			}
			if o.Network != "default" && o.Network != "none" {
				return usageError("--network %q: give default or none", o.Network)
			}
			o.Env = c.StringSlice("env")
			o.Labels = c.StringSlice("label")
			o.hosts = c.StringSlice("host")
			if len(o.hosts) > 0 {
				o.Where.Host = o.hosts[0]
			}
			if err := o.cluster.Finish(a.Backends(), &o.Where, c.IsSet); err != nil {
				return err
			}
			o.Registry, o.PullSecret, o.PendingLimit = o.cluster.Registry, o.cluster.PullSecret, o.cluster.PendingLimit
			if o.Where.Cluster() && len(o.hosts) > 1 {
				return usageError("%s runs on one cluster: give at most one --host (the Docker host that builds the image)", connect.Capabilities(o.Where).Flag)
			}
			if c.IsSet("split") {
				if o.split < 2 || o.split > result.MaxSplit {
					return usageError("--split %d: give 2 to %d jobs to split the sweep over", o.split, result.MaxSplit)
				}
				if len(o.hosts) > 1 {
					return usageError("--split runs its jobs on one place: give at most one --host")
				}
				return runSubmitSplit(c.Context, a, o)
			}
			if len(o.hosts) > 1 {
				return runSubmitFanout(c.Context, a, o, o.hosts)
			}
			return runSubmit(c.Context, a, o)
		},
	}
}

func runSubmit(ctx context.Context, a *App, o submitOptions) error {
	r, err := a.submitRequest(ctx, o, a.Err)
	if err != nil {
		return err
	}
	m, err := a.Jobs()
	if err != nil {
		return err
	}
	if !o.Detach && a.StdoutClosed != nil {
		m.Detach = a.StdoutClosed()
	}
	_, err = a.submit(ctx, m, r, o, submitStreams{out: a.Out, err: a.Err, oneTerminal: a.OutTTY != nil && a.ErrTTY != nil})
	return err
}

// submitRequest is the submit o asks for, checked before anything is
// built: the post to the config's server, the request, and the preflight
// of the spec's references. Warnings go to warn.
func (a *App) submitRequest(ctx context.Context, o submitOptions, warn io.Writer) (job.SubmitRequest, error) {
	post, err := a.configPost()
	if err != nil {
		return job.SubmitRequest{}, err
	}
	o.Post = post
	r, err := job.Request(o.Args, a.Getenv, warn)
	if err != nil {
		return r, err
	}
	if !o.noPreflight {
		if err := job.Preflight(ctx, r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// submitStreams are where a submit prints: its results (out) and its
// progress, warnings and log (err). oneTerminal says both are the same
// terminal, where the log just shown need not be repeated.
type submitStreams struct {
	out, err    io.Writer
	oneTerminal bool
}

// submit submits r through m, and prints what a submit prints, as o
// asks, to s. It returns the job's record where one was made.
func (a *App) submit(ctx context.Context, m *job.Manager, r job.SubmitRequest, o submitOptions, s submitStreams) (*store.Job, error) {
	if o.quiet {
		// The cluster's push lines too: -q leaves errors alone on stderr.
		m.Err, m.Backends.KubeLog = io.Discard, io.Discard
	}
	j, err := m.Submit(ctx, r)
	if errors.Is(err, job.ErrDetached) {
		// Whoever read stdout has stopped; the job was not asked to.
		return j, nil
	}
	if err != nil {
		// A job that was recorded and then failed to start, was interrupted
		// or could not be finished has a record all the same: --json prints
		// it, so that a script learns the job's id and how it ended.
		if o.json && j != nil {
			render.JSON(s.out, j)
		} else if j != nil && !o.quiet && !o.Detach && j.Status == result.StatusCancelled {
			// Interrupted (Ctrl-C): the partial results are in the store;
			// the table shows them, and xrun says where they stay.
			if st, serr := a.Store(); serr == nil && st.Has(j.ID, store.ResultsFile) {
				if a.writeStoredResults(s.out, j, render.Table, render.Options{}) == nil {
					fmt.Fprintf(s.err, "partial results kept: xrun results %s\n", j.ID)
				}
			}
		}
		return j, err
	}
	switch {
	case o.quiet && !o.Detach:
		fmt.Fprintf(s.out, "%s %s\n", j.ID, j.Status)
	case o.json:
		if err := render.JSON(s.out, j); err != nil {
			return j, err
		}
	case o.Detach:
		fmt.Fprintln(s.out, j.ID)
		return j, nil
	default:
		// The run's error was streamed in the log just now: the table and
		// xrun's last line point to it rather than say it again (on one
		// terminal; a file or a pipe gets the whole table).
		inLog := a.errorInLog(j)
		err := a.writeStoredResults(s.out, j, render.Table, render.Options{ErrorShown: inLog && s.oneTerminal})
		if err != nil && j.Status == result.StatusSucceeded {
			return j, err
		}
		// On one terminal the table just listed what failed.
		if inLog || err == nil && s.oneTerminal {
			return j, job.OutcomeShown(j)
		}
	}
	if o.Detach {
		return j, nil
	}
	return j, job.Outcome(j)
}

// errorInLog says whether job j's error is a line of its stored log, as
// the runner logs it ("error: ..."): the attached submit showed it there.
func (a *App) errorInLog(j *store.Job) bool {
	if j.Error == "" {
		return false
	}
	st, err := a.Store()
	if err != nil {
		return false
	}
	data, err := os.ReadFile(st.Log(j.ID))
	first, _, _ := strings.Cut(strings.TrimSpace(j.Error), "\n")
	return err == nil && strings.Contains(string(data), " error: "+first)
}

// printStoredResults prints the job's results.json from the store.
func (a *App) printStoredResults(j *store.Job, f render.Format, o render.Options) error {
	return a.writeStoredResults(a.Out, j, f, o)
}

// writeStoredResults writes the job's results.json from the store to w.
func (a *App) writeStoredResults(w io.Writer, j *store.Job, f render.Format, o render.Options) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	data, err := storedResults(st, j)
	if err != nil {
		return err
	}
	return writeResults(w, j, data, nil, f, o)
}

// storedResults is job j's results.json from the store (store.ReadResults):
// a copy changed since the job ended is exit code 4.
func storedResults(st *store.Store, j *store.Job) ([]byte, error) {
	data, err := st.ReadResults(j)
	var te *store.TamperedError
	switch {
	case errors.As(err, &te):
		return nil, &contract.ExitError{Code: contract.ExitInfra, Err: err}
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("job %s has no results: %w", j.ID, err)
	}
	return data, err
}

// writeResults writes job j's results.json, data (decoded as r, when the
// caller has), to w in format f.
func writeResults(w io.Writer, j *store.Job, data []byte, r *result.Results, f render.Format, o render.Options) error {
	switch f {
	case render.RawJSON:
		_, err := w.Write(data)
		return err
	case render.CSV:
		// Read case by case: a run at the case cap is 170 MB of JSON.
		_, rows, err := flat.Read(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("read results of job %s: %w", j.ID, err)
		}
		return flat.WriteCSV(w, rows)
	}
	if r == nil {
		var err error
		if r, err = result.Decode(data); err != nil {
			return fmt.Errorf("read results of job %s: %w", j.ID, err)
		}
	}
	return render.Results(w, r, f, o)
}
