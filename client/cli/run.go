package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/runner/report"
	"github.com/xrun-dev/xrun/runner/result"
	"github.com/xrun-dev/xrun/runner/run"
	"github.com/xrun-dev/xrun/runner/version"
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
	out := o.out
	if out == "" {
		out = filepath.Join(o.dir, ".xrun", "out")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("make output directory: %w", err)
	}
	mode := ""
	if o.cpu {
		mode = "cpu"
	}
	// The runner's progress lines are a status line on a terminal.
	view := render.NewLog(render.NewStatus(a.Err, a.ErrTTY))
	r, err := run.Run(ctx, run.Options{
		ExperimentDir: o.dir,
		OutDir:        out,
		Mode:          mode,
		CPUHint:       "pass --cpu",
		Python:        o.python,
		ClientVersion: version.Version,
		Log:           view,
	})
	view.Close()
	if r != nil {
		var perr error
		if o.json {
			perr = render.JSON(a.Out, r)
		} else {
			perr = report.Text(a.Out, r)
		}
		if perr != nil && err == nil {
			err = perr
		}
		fmt.Fprintf(a.Err, "results: %s\n", filepath.Join(out, result.FileName))
	}
	var ng *run.NoGPUError
	if errors.As(err, &ng) {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	if code := run.ExitCode(r, err); code != 0 {
		return &ExitError{Code: code, Err: err}
	}
	return nil
}
