package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/xrun-dev/xrun/runner/run"
	"github.com/xrun-dev/xrun/runner/version"
)

// RunnerName is the name the xrun binary answers to as the in-container
// runner (/usr/local/bin/xrun-runner in every image).
const RunnerName = "xrun-runner"

// RunnerArg as the first argument also selects the runner.
const RunnerArg = "__runner"

// IsRunner reports whether args (os.Args) ask for the runner rather than
// the CLI: the binary is called xrun-runner, or the first argument is
// __runner.
func IsRunner(args []string) bool {
	if len(args) == 0 {
		return false
	}
	return filepath.Base(args[0]) == RunnerName || len(args) > 1 && args[1] == RunnerArg
}

// RunnerMain is runner/cmd/xrun-runner's command line inside the xrun
// binary, so one static binary is both client and runner:
//
//	xrun-runner --experiment DIR --out DIR [--mode gpu|cpu] [--python PATH]
//
// Unset flags come from the XRUN_* environment (docs/architecture.md).
// Progress and the final table go to stderr; it returns the runner's exit
// code (run.ExitCode).
func RunnerMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	args = args[1:]
	if len(args) > 0 && args[0] == RunnerArg {
		args = args[1:]
	}
	o := run.OptionsFromEnv()
	fs := flag.NewFlagSet(RunnerName, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.ExperimentDir, "experiment", or(o.ExperimentDir, run.DefaultExperimentDir), "experiment `dir`ectory (holds xrun.yaml) [$XRUN_EXPERIMENT]")
	fs.StringVar(&o.OutDir, "out", or(o.OutDir, run.DefaultOutDir), "output `dir`ectory for results.json and logs [$XRUN_OUT]")
	fs.StringVar(&o.Mode, "mode", o.Mode, "gpu or cpu (default: gpu when nvidia-smi finds a GPU) [$XRUN_MODE]")
	fs.StringVar(&o.Python, "python", o.Python, "Python `interpreter` for the harness [$XRUN_PYTHON]")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return run.ExitBadSpec
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q; the experiment is given with --experiment\n", RunnerName, fs.Args())
		return run.ExitBadSpec
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.Get())
		return 0
	}
	// A closed log pipe must not kill the run: writes then just fail.
	signal.Ignore(syscall.SIGPIPE)
	o.Log = stderr
	r, err := run.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", RunnerName, err)
	}
	return run.ExitCode(r, err)
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
