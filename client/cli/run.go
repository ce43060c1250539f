package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/exit"
	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/client/submit"
	"github.com/xrun-dev/xrun/runner/result"
	"github.com/xrun-dev/xrun/runner/spec"
)

type runOptions struct {
	dir    string
	local  bool
	cpu    bool
	out    string
	python string
	json   bool
}

func newRunCommand(a *App) *cli.Command {
	var o runOptions
	return &cli.Command{
		Name:      "run",
		Usage:     "run an experiment with the runner on this machine, without Docker",
		ArgsUsage: "DIR",
		Description: `For development, and for GPU boxes without Docker: the experiment's Python
dependencies must already be importable by python3 here.

The run is a job of this machine (host local://HOSTNAME): it is recorded in the
job store, followed here to its end as an attached xrun submit is, and xrun ps,
logs, status, wait, results and cancel take its id. Ctrl-C stops the runner
gracefully (it writes partial results); a second Ctrl-C kills it.

Examples:
  xrun run --local --cpu my-kernel
  xrun run --local --out /tmp/out experiments/039-gla-pingpong && jq .success /tmp/out/results.json`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "local", Usage: "run here, without a container (required: the only mode for now)", Destination: &o.local},
			&cli.BoolFlag{Name: "cpu", Usage: "run the CPU sweep even when a GPU is present", Destination: &o.cpu},
			&cli.StringFlag{Name: "out", Usage: "output directory (default DIR/.xrun/out)", Destination: &o.out},
			&cli.StringFlag{Name: "python", EnvVars: []string{"XRUN_PYTHON"}, Usage: "Python interpreter for the harness (the one picked is logged as python: PATH)", DefaultText: "the first of python3, /usr/bin/python3, /usr/local/bin/python3, /opt/conda/bin/python3, python that imports numpy", Destination: &o.python},
			&cli.BoolFlag{Name: "json", Usage: "print results.json instead of the table", Destination: &o.json},
		},
		BashComplete: completeDirs,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("run takes one experiment directory, got %d arguments", c.NArg())
			}
			if !o.local {
				return usageError("run needs --local (to run in a container, use xrun submit)")
			}
			o.dir = c.Args().First()
			return runRun(c.Context, a, o)
		},
	}
}

func runRun(ctx context.Context, a *App, o runOptions) error {
	s, err := spec.Load(o.dir)
	if err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	out := o.out
	if out == "" {
		out = filepath.Join(o.dir, ".xrun", "out")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("make output directory: %w", err)
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the xrun binary to run the runner: %w", err)
	}
	m, err := a.Jobs()
	if err != nil {
		return err
	}
	b, err := a.Backends().Local()
	if err != nil {
		return &ExitError{Code: ExitInfra, Err: err}
	}
	if a.StdoutClosed != nil {
		m.Detach = a.StdoutClosed()
	}
	// The runner picks GPU or CPU where no --cpu says.
	rec := &jobs.Job{Experiment: s.Name, ExperimentDir: dir, SpecHash: s.Hash, Mode: "auto", GPUs: "-"}
	if o.cpu {
		rec.Mode, rec.GPUs = "cpu", "0"
	}
	if t := s.Resources.Timeout.Duration; t > 0 {
		rec.Timeout = t.String()
	}
	j, err := m.RunLocal(ctx, job.LocalRequest{Backend: b, Record: rec, Spec: func(j *jobs.Job) backend.Spec {
		argv := []string{exe, LocalRunnerArg, "--experiment", dir, "--out", absOut, "--job-id", j.ID}
		if o.cpu {
			argv = append(argv, "--mode", "cpu")
		}
		if o.python != "" {
			argv = append(argv, "--python", o.python)
		}
		return backend.Spec{Name: submit.JobName(s.Name, j.ID), Command: argv, OutDir: absOut}
	}})
	if errors.Is(err, job.ErrDetached) {
		return nil // whoever read stdout has stopped; the job was not asked to
	}
	if j == nil {
		return err
	}
	inLog := a.errorInLog(j)
	perr := a.printRunResults(j, o.json, inLog)
	if perr == nil {
		fmt.Fprintf(a.Err, "results: %s\n", filepath.Join(out, result.FileName))
	}
	if err != nil {
		return err // interrupted (the partial results are above), or never started
	}
	if perr != nil && j.Status == result.StatusSucceeded {
		return perr
	}
	if inLog || perr == nil && a.OutTTY != nil && a.ErrTTY != nil {
		return runOutcome(j, job.OutcomeShown(j))
	}
	return runOutcome(j, job.Outcome(j))
}

// printRunResults prints the results of a run --local job from the store:
// results.json with asJSON, else the table.
func (a *App) printRunResults(j *jobs.Job, asJSON, errorShown bool) error {
	if !asJSON {
		return a.printSubmitResults(j, errorShown)
	}
	st, err := a.Store()
	if err != nil {
		return err
	}
	r, err := result.ReadFile(filepath.Join(st.Dir(j.ID), jobs.ResultsFile))
	if err != nil {
		return fmt.Errorf("job %s has no results: %w", j.ID, err)
	}
	return writeJSON(a.Out, r)
}

// runOutcome is a run --local job's outcome err with the exit code the
// runner gives it (run.ExitCode): a run past resources.timeout, which the
// runner stops itself, is a failure (2) there.
func runOutcome(j *jobs.Job, err error) error {
	if j.Status == result.StatusTimeout && j.StoppedBy == "" {
		return &ExitError{Code: exit.Failed, Err: fmt.Errorf("job %s ran past resources.timeout (%s): raise it in %s (see the results above or `xrun results %s`)", j.ID, j.Timeout, spec.FileName, j.ID)}
	}
	return err
}
