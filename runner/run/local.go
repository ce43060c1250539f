package run

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/version"
)

// IsLocalRunner reports whether args (os.Args of the xrun binary) ask for
// the runner of a job of xrun run --local (LocalMain).
func IsLocalRunner(args []string) bool { return len(args) > 1 && args[1] == contract.LocalRunnerArg }

// LocalMain runs the runner as a job of xrun run --local does, its
// arguments after contract.LocalRunnerArg: what that command did in its own process
// before, with the options it was given as flags (never the XRUN_*
// environment, which is a container's), progress on stderr (the job's
// log), and the table left to the xrun that prints it from the results.
// The exit code is ExitCode's, and a spec that asks for a GPU this
// machine lacks is a usage error (3): --cpu runs it.
func LocalMain(ctx context.Context, args []string, stderr io.Writer) int {
	// The runner's process is the job's alone: what the experiment
	// starts goes with it (Options.OwnTree).
	o := Options{CPUHint: "pass --cpu", ClientVersion: version.Version, Log: stderr, OwnTree: true}
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
		return contract.ExitUsage
	}
	start := time.Now()
	r, err := Run(ctx, o)
	// An error the run logged as it stopped ("error: ...") is not said
	// again.
	if err != nil && (r == nil || r.Error != err.Error()) {
		msg := err.Error()
		if errors.Is(err, context.Canceled) {
			msg = fmt.Sprintf("cancelled after %.1f s; partial results kept", time.Since(start).Seconds())
		}
		fmt.Fprintf(stderr, "xrun: %s\n", msg)
	}
	var ng *NoGPUError
	if errors.As(err, &ng) {
		return contract.ExitUsage
	}
	return ExitCode(r, err)
}
