package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/xrun-dev/xrun/runner/report"
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

// RunnerMain runs the in-container runner:
//
//	xrun-runner --experiment DIR --out DIR [--mode gpu|cpu] [--python PATH]
//
// Unset flags come from the environment (XRUN_* as docs/architecture.md
// lists). It returns the runner's exit code.
func RunnerMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 1 && args[1] == RunnerArg {
		args = append([]string{args[0]}, args[2:]...)
	}
	o := run.OptionsFromEnv()
	fs := flag.NewFlagSet(RunnerName, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.ExperimentDir, "experiment", o.ExperimentDir, "experiment directory (with xrun.yaml)")
	fs.StringVar(&o.OutDir, "out", o.OutDir, "output directory for results.json and logs")
	fs.StringVar(&o.Mode, "mode", o.Mode, "gpu or cpu (default: gpu when nvidia-smi works)")
	fs.StringVar(&o.Python, "python", o.Python, "Python interpreter")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args[1:]); err != nil {
		return 3
	}
	if *showVersion {
		fmt.Fprintf(stdout, "xrun-runner %s\n", version.Version)
		return 0
	}
	if o.ExperimentDir == "" || o.OutDir == "" {
		fmt.Fprintln(stderr, "xrun-runner: --experiment and --out are required")
		return 3
	}
	o.Log = stderr
	r, err := run.Run(ctx, o)
	if r != nil {
		report.Text(stdout, r)
	}
	if err != nil {
		fmt.Fprintf(stderr, "xrun-runner: %v\n", err)
	}
	return run.ExitCode(r, err)
}
