package cli

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"
	"github.com/xrun-dev/xrun/client/backends"
	"github.com/xrun-dev/xrun/client/job"
)

type cancelOptions struct {
	// host is where to look for a job this store has no record of (findJob).
	host  backends.Selection
	job   string
	force bool
}

func newCancelCommand(a *App) *cli.Command {
	var o cancelOptions
	return &cli.Command{
		Name:      "cancel",
		Usage:     "stop a running job; its partial results are kept",
		ArgsUsage: "JOB",
		Description: `Sends SIGTERM (the runner writes results.json with status cancelled), then
SIGKILL after 10 s. The container stays until xrun rm.

Examples:
  xrun cancel 3fa1` + foundOnHost,
		Flags: append(hostFlags(&o.host),
			&cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "cancel another user's job too", Destination: &o.force}),
		BashComplete: completeJobs(a),
		Action: func(c *cli.Context) error {
			if err := oneJob(c, &o.job, &o.host); err != nil {
				return err
			}
			return runCancel(c.Context, a, o)
		},
	}
}

func runCancel(ctx context.Context, a *App, o cancelOptions) error {
	m, err := a.Jobs()
	if err != nil {
		return err
	}
	j, err := m.Find(ctx, o.job, o.host)
	if err != nil {
		return err
	}
	if err := job.CheckOwner(j, o.force, "cancel"); err != nil {
		return err
	}
	ended, err := m.Cancel(ctx, j)
	if ended {
		fmt.Fprintf(a.Err, "job %s already ended (%s)\n", j.ID, j.Status)
		return err
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Err, "cancelled job %s\n", j.ID)
	return nil
}
