package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/xrun-dev/xrun/runner/contract"
	"github.com/xrun-dev/xrun/runner/run"
	"github.com/xrun-dev/xrun/runner/version"
)

// RunnerName is the name the xrun binary answers to as the in-container
// runner (/usr/local/bin/xrun-runner in every image).
const RunnerName = "xrun-runner"

// RunnerArg as the first argument also selects the runner.
const RunnerArg = "__runner"

// LocalRunnerArg as the first argument selects the runner of a job of
// xrun run --local (LocalRunnerMain).
const LocalRunnerArg = "__run-local"

// IsRunner reports whether args (os.Args) ask for the runner rather than
// the CLI: the binary is called xrun-runner, or the first argument is
// __runner or __run-local.
func IsRunner(args []string) bool {
	if len(args) == 0 {
		return false
	}
	return filepath.Base(args[0]) == RunnerName || len(args) > 1 && (args[1] == RunnerArg || args[1] == LocalRunnerArg)
}

// RunnerMain is runner/cmd/xrun-runner's command line (run.Main) inside
// the xrun binary, so one static binary is both client and runner. args
// are os.Args; it returns the runner's exit code.
func RunnerMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	args = args[1:]
	if len(args) > 0 && args[0] == LocalRunnerArg {
		return LocalRunnerMain(ctx, args[1:], stderr)
	}
	if len(args) > 0 && args[0] == RunnerArg {
		args = args[1:]
	}
	return run.Main(ctx, RunnerName, args, stdout, stderr)
}

// LocalRunnerMain runs the runner as the job of xrun run --local does
// (client/backend/local): what that command did in its own process
// before, with the options it was given as flags (never the XRUN_*
// environment, which is a container's), progress on stderr (the job's
// log), and the table left to the xrun that prints it from the results.
// The exit code is run.ExitCode's, and a spec that asks for a GPU this
// machine lacks is a usage error (3): --cpu runs it.
func LocalRunnerMain(ctx context.Context, args []string, stderr io.Writer) int {
	o := run.Options{CPUHint: "pass --cpu", ClientVersion: version.Version, Log: stderr}
	fs := flag.NewFlagSet("xrun run --local", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.ExperimentDir, "experiment", "", "experiment directory")
	fs.StringVar(&o.OutDir, "out", "", "output directory")
	fs.StringVar(&o.Mode, "mode", "", "gpu or cpu")
	fs.StringVar(&o.Python, "python", "", "Python interpreter for the harness")
	fs.StringVar(&o.JobID, "job-id", "", "the job's id")
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
		return ExitUsage
	}
	return run.ExitCode(r, err)
}
