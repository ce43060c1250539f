package local

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/xrun-dev/xrun/runner/contract"
	"github.com/xrun-dev/xrun/runner/run"
	"github.com/xrun-dev/xrun/runner/version"
)

// RunnerArg, as the xrun binary's first argument, makes it the runner of
// a local job (RunnerMain).
const RunnerArg = "__run-local"

// IsRunner reports whether args (os.Args) ask for a local job's runner.
func IsRunner(args []string) bool { return len(args) > 1 && args[1] == RunnerArg }

// Command is the command line of a local job's runner: the xrun binary
// exe as RunnerArg, for the experiment in dir writing to out (both
// absolute), in CPU mode with cpu, with python as the harness's
// interpreter where given.
func Command(exe, dir, out string, cpu bool, python, jobID string) []string {
	argv := []string{exe, RunnerArg, "--experiment", dir, "--out", out, "--job-id", jobID}
	if cpu {
		argv = append(argv, "--mode", "cpu")
	}
	if python != "" {
		argv = append(argv, "--python", python)
	}
	return argv
}

// RunnerMain runs the runner as a local job does, its arguments after
// RunnerArg: what that command did in its own process
// before, with the options it was given as flags (never the XRUN_*
// environment, which is a container's), progress on stderr (the job's
// log), and the table left to the xrun that prints it from the results.
// The exit code is run.ExitCode's, and a spec that asks for a GPU this
// machine lacks is a usage error (3): --cpu runs it.
func RunnerMain(ctx context.Context, args []string, stderr io.Writer) int {
	// The runner's process is the job's alone: what the experiment
	// starts goes with it (run.Options.OwnTree).
	o := run.Options{CPUHint: "pass --cpu", ClientVersion: version.Version, Log: stderr, OwnTree: true}
	fs := flag.NewFlagSet("xrun run --local", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.ExperimentDir, "experiment", "", "experiment directory")
	fs.StringVar(&o.OutDir, "out", "", "output directory")
	fs.StringVar(&o.Mode, "mode", "", "gpu or cpu")
	fs.StringVar(&o.Python, "python", "", "Python interpreter for the harness")
	fs.StringVar(&o.JobID, "job-id", "", "the job's id")
	// The one knob of the container's environment a local run takes from
	// the shell: when a timing counts as taken on a busy host.
	o.HostBusyShare = os.Getenv(contract.EnvHostBusyShare)
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || o.ExperimentDir == "" || o.OutDir == "" {
		fmt.Fprintf(stderr, "xrun: the local runner takes --experiment DIR --out DIR [--mode cpu] [--python PATH] [--job-id ID]\n")
		return contract.ExitBadSpec
	}
	start := time.Now()
	r, err := run.Run(ctx, o)
	// An error the run logged as it stopped ("error: ...") is not said
	// again.
	if err != nil && (r == nil || r.Error != err.Error()) {
		msg := err.Error()
		if errors.Is(err, context.Canceled) {
			msg = fmt.Sprintf("cancelled after %.1f s; partial results kept", time.Since(start).Seconds())
		}
		fmt.Fprintf(stderr, "xrun: %s\n", msg)
	}
	var ng *run.NoGPUError
	if errors.As(err, &ng) {
		return contract.ExitBadSpec
	}
	return run.ExitCode(r, err)
}

// Role runs what the xrun binary is asked to be when it is not the
// command line (args are os.Args): a local job's supervisor (SuperviseArg),
// a local job's runner (RunnerArg), or the in-container runner
// (run.IsRunner); ok is false when args ask for the command line. The
// runners stop on SIGINT and SIGTERM.
func Role(args []string) (code int, ok bool) {
	switch {
	case IsSupervisor(args):
		return Supervise(args[2]), true
	case IsRunner(args), run.IsRunner(args):
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if IsRunner(args) {
			return RunnerMain(ctx, args[2:], os.Stderr), true
		}
		return run.RunnerMain(ctx, args, os.Stdout, os.Stderr), true
	}
	return 0, false
}
