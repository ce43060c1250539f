// Command xrun-runner runs an experiment: it checks every implementation
// against the reference, times them, and writes results.json.
//
//	xrun-runner --experiment /xrun/exp --out /xrun/out
//
// Flags override the XRUN_* environment (docs/architecture.md); the exit
// code says how the run went (run.ExitCode).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/xrun-dev/xrun/runner/run"
	"github.com/xrun-dev/xrun/runner/version"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	o := run.OptionsFromEnv()
	fs := flag.NewFlagSet("xrun-runner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.ExperimentDir, "experiment", or(o.ExperimentDir, run.DefaultExperimentDir), "experiment `dir`ectory (holds xrun.yaml) [$XRUN_EXPERIMENT]")
	fs.StringVar(&o.OutDir, "out", or(o.OutDir, run.DefaultOutDir), "output `dir`ectory for results.json and logs [$XRUN_OUT]")
	fs.StringVar(&o.Mode, "mode", o.Mode, "gpu or cpu (default: gpu when nvidia-smi finds a GPU) [$XRUN_MODE]")
	fs.StringVar(&o.Python, "python", o.Python, "Python `interpreter` for the harness (default: the first python3 with numpy) [$XRUN_PYTHON]")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return run.ExitBadSpec
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "xrun-runner: unexpected arguments %q; the experiment is given with --experiment\n", fs.Args())
		return run.ExitBadSpec
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.Get())
		return 0
	}
	// A closed log pipe must not kill the run: writes then just fail.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.Log = stderr
	r, err := run.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "xrun-runner: %v\n", err)
	}
	return run.ExitCode(r, err)
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
