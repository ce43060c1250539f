package cli

import (
	"context"
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/store"
)

type rerunCmdOptions struct {
	ref    jobRef
	detach bool
	json   bool
	quiet  bool
}

func newRerunCommand(a *App) *cli.Command {
	var o rerunCmdOptions
	return forOneJob(a, &o.ref, &cli.Command{
		Name:  "rerun",
		Usage: "run a job again: its experiment directory as it is now, on its host and GPUs, with its options",
		Description: `The rerun is a new job, submitted as the first one was: the same host, mode and
GPUs (waiting for them while other jobs hold them), timeout, base, labels, network,
--root, --no-standby and --no-cache-volume, and the same --env names, read from this
shell again (values are never recorded). The code is the experiment directory as
it is now. A job of xrun run --local runs again on this machine, into an output
directory of its own. It exits as xrun submit does.

Examples:
  xrun rerun 3fa1                   # attached: the table at the end
  xrun rerun -d 3fa1                # print the new job's id and return
  xrun compare 3fa1 $(xrun rerun -q 3fa1 | cut -d' ' -f1)` + foundOnHost,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "detach", Aliases: []string{"d"}, Usage: "print the new job's id and return once it runs", Destination: &o.detach},
			&cli.BoolFlag{Name: "json", Usage: "print the new job's record as JSON when it ends", Destination: &o.json},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "on stdout only the new job's id (-d) or its id and final status", Destination: &o.quiet},
		},
	}, nil, func(ctx context.Context, m *job.Manager, j *store.Job) error {
		return runRerun(ctx, a, o, m, j)
	})
}

func runRerun(ctx context.Context, a *App, o rerunCmdOptions, m *job.Manager, j *store.Job) error {
	if j.ExperimentDir == "" {
		return usageError("job %s's record does not say which directory it ran: submit the experiment again with xrun submit", j.ID)
	}
	if job.RanLocally(j) {
		if o.detach {
			return usageError("job %s ran with xrun run --local, which has no --detach: rerun it attached", j.ID)
		}
		rerun, err := m.RerunLocal(ctx, j)
		if errors.Is(err, job.ErrDetached) || rerun == nil {
			return err
		}
		if o.json {
			if jerr := render.JSON(a.Out, rerun); jerr != nil {
				return jerr
			}
			return err
		}
		if perr := a.printStoredResults(rerun, render.Table, render.Options{}); perr != nil && err == nil {
			return perr
		}
		return err
	}
	so := submitOptions{Args: job.RerunArgs(j, nil)}
	if so.Registry == "" {
		// A record from before the registry was kept: the one this
		// shell names, as submit reads it.
		so.Registry = a.getenv(connect.RegistryEnv)
	}
	so.Detach, so.json, so.quiet = o.detach, o.json, o.quiet
	return runSubmit(ctx, a, so)
}
