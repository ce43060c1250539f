package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/result"
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
	m, err := a.Jobs()
	if err != nil {
		return err
	}
	req, out, err := m.Local(job.LocalArgs{Dir: o.dir, Out: o.out, CPU: o.cpu, Python: o.python})
	if err != nil {
		return err
	}
	if a.StdoutClosed != nil {
		m.Detach = a.StdoutClosed()
	}
	j, err := m.RunLocal(ctx, req)
	if errors.Is(err, job.ErrDetached) {
		return nil // whoever read stdout has stopped; the job was not asked to
	}
	if j == nil {
		return err
	}
	inLog := a.errorInLog(j)
	f, ro := render.Table, render.Options{ErrorShown: inLog && a.OutTTY != nil && a.ErrTTY != nil}
	if o.json {
		f = render.RawJSON
	}
	perr := a.printStoredResults(j, f, ro)
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
		return job.LocalOutcome(j, job.OutcomeShown(j))
	}
	return job.LocalOutcome(j, job.Outcome(j))
}
