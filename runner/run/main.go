package run

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

	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/version"
	"github.com/xrun-dev/xrun/report"
	"github.com/xrun-dev/xrun/runner/sandbox"
)

// Main is the runner's command line, shared by runner/cmd/xrun-runner and
// the xrun binary acting as the runner:
//
//	xrun-runner --experiment DIR --out DIR [--mode gpu|cpu] [--python PATH] [--no-clock-monitor] [--profile SPEC] [--version]
//
// Unset flags come from the XRUN_* environment (docs/architecture.md).
// Progress goes to stderr, and the final table too unless XRUN_JOB_ID is
// set: that is a container of xrun submit, whose client prints the table
// from results.json after streaming the log, so printing it here would
// show it twice. It returns the exit code (ExitCode); ctx carries
// cancellation (SIGINT/SIGTERM in the callers).
func Main(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	// As a container's first process the runner is its init too: it runs
	// again as the init's child.
	if code, isInit := sandbox.Init(); isInit {
		return code
	}
	o := OptionsFromEnv()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.ExperimentDir, "experiment", orString(o.ExperimentDir, contract.ExperimentDir), "experiment `dir`ectory (holds xrun.yaml) [$XRUN_EXPERIMENT]")
	fs.StringVar(&o.OutDir, "out", orString(o.OutDir, contract.OutDir), "output `dir`ectory for results.json and logs [$XRUN_OUT]")
	fs.StringVar(&o.Mode, "mode", o.Mode, "gpu or cpu (default: gpu when nvidia-smi finds a GPU) [$XRUN_MODE]")
	fs.StringVar(&o.Python, "python", o.Python, "Python `interpreter` for the harness (default: the first python3 with numpy) [$XRUN_PYTHON]")
	fs.BoolVar(&o.NoClockMonitor, "no-clock-monitor", o.NoClockMonitor, "do not read the GPU's clocks every 100 ms while timing (only before and after) [$XRUN_CLOCK_MONITOR=off]")
	fs.StringVar(&o.Profile, "profile", o.Profile, "after timing, write Nsight Compute reports to OUT/profile/: `ncu`, or ncu:impl=a,b;case=0,2;set=full;clock=base [$XRUN_PROFILE]")
	fs.BoolVar(&o.Retune, "retune", o.Retune, "time every autotuned Triton kernel's configs afresh instead of reading the configs stored in the compile caches [$XRUN_RETUNE=1]")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return contract.ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q; the experiment is given with --experiment\n", name, fs.Args())
		return contract.ExitUsage
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.Get())
		return 0
	}
	// A closed log pipe must not kill the run: writes then just fail.
	signal.Ignore(syscall.SIGPIPE)
	o.Log = stderr
	worker, err := sandbox.FromEnv()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return contract.ExitInfra
	}
	o.Worker = worker
	idle, err := standbyIdle()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return contract.ExitUsage
	}
	if idle > 0 {
		if o, err = standby(ctx, o, idle); err != nil {
			switch {
			case errors.Is(err, errNoJob):
				fmt.Fprintf(stderr, "%s: %v; it ran nothing\n", name, err)
				return contract.ExitSucceeded
			case ctx.Err() != nil:
				return contract.ExitCancelled
			}
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return contract.ExitInfra
		}
	}
	start := time.Now()
	r, err := Run(ctx, o)
	// Run returns an error with results only when they stopped before any
	// case (no table to show) or on cancellation (a partial table).
	if r != nil && (err == nil || errors.Is(err, context.Canceled)) && o.JobID == "" {
		if terr := report.Text(stderr, r); terr != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, terr)
		}
	}
	// An error the run logged as it stopped ("error: ...") is not said
	// again: the log is where a person reads it.
	if err != nil && (r == nil || r.Error != err.Error()) {
		fmt.Fprintf(stderr, "%s: %s\n", name, exitLine(err, time.Since(start)))
	}
	if o.OutToLog {
		if _, serr := os.Stat(o.OutDir); serr == nil {
			if werr := contract.WriteOut(stdout, o.OutDir); werr != nil {
				fmt.Fprintf(stderr, "%s: write the output directory into the log: %v\n", name, werr)
			}
		}
	}
	return ExitCode(r, err)
}

// exitLine is the runner's last word on an error: a cancellation (SIGTERM,
// Ctrl-C, xrun cancel) said in words, not as Go's "context canceled".
func exitLine(err error, took time.Duration) string {
	if errors.Is(err, context.Canceled) {
		return fmt.Sprintf("cancelled after %.1f s; partial results kept", took.Seconds())
	}
	return err.Error()
}

func orString(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
