package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"
	"github.com/xrun-dev/xrun/client/backends"
	"github.com/xrun-dev/xrun/client/job"
)

type rmOptions struct {
	// host is where to look for jobs this store has no record of (ps
	// lists those from the host's containers).
	host  backends.Selection
	jobs  []string
	force bool
	keep  bool
}

func newRmCommand(a *App) *cli.Command {
	var o rmOptions
	return &cli.Command{
		Name:      "rm",
		Usage:     "remove jobs' containers and records",
		ArgsUsage: "JOB...",
		Description: `Results and logs are fetched into the store before the container goes; with
--keep-record the record (and its results) stay, so xrun results still works.
A job this store has no record of (submitted from another machine or with
another XDG_DATA_HOME, listed by xrun ps from its container) is found by its
container's job label on the host, and its container removed.

Examples:
  xrun rm 3fa1
  xrun rm --force 3fa1            # stop it first when it still runs
  xrun rm --keep-record 3fa1
  xrun rm --host ssh://me@gpu-box 9c2e   # a job listed by xrun ps --host ssh://me@gpu-box`,
		Flags: append(hostFlags(&o.host),
			&cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "remove a running job, or another user's, too", Destination: &o.force},
			&cli.BoolFlag{Name: "keep-record", Usage: "remove the container only; keep the record, results and logs", Destination: &o.keep},
		),
		BashComplete: completeJobs(a),
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return usageError("rm takes one or more job ids")
			}
			o.host.MoveContextToKube()
			o.jobs = c.Args().Slice()
			return runRm(c.Context, a, o)
		},
	}
}

func runRm(ctx context.Context, a *App, o rmOptions) error {
	m, err := a.Jobs()
	if err != nil {
		return err
	}
	var errs []error
	for _, ref := range o.jobs {
		id, err := m.Remove(ctx, ref, job.RemoveOptions{Where: o.host, Force: o.force, KeepRecord: o.keep})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintln(a.Out, id)
	}
	return errors.Join(errs...)
}
