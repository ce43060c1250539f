package cli

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"
	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/store"
)

type cancelOptions struct {
	ref   jobRef
	force bool
}

func newCancelCommand(a *App) *cli.Command {
	var o cancelOptions
	o.ref.act = &actOn{command: "cancel", force: &o.force}
	o.ref.parts = func(ctx context.Context, m *job.Manager, pe *job.PartsError) error {
		for _, p := range pe.Parts {
			if err := job.CheckOwner(p, o.force, "cancel"); err != nil {
				return err
			}
		}
		cancelParts(a, m, pe.Parts)
		j, err := m.Gather(ctx, pe.ID)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.Err, "cancelled job %s (its %d parts); what they ran is gathered: xrun results %s\n", j.ID, len(pe.Parts), j.ID)
		return nil
	}
	return forOneJob(a, &o.ref, &cli.Command{
		Name:  "cancel",
		Usage: "stop a running job; its partial results are kept",
		Description: `Sends SIGTERM (the runner writes results.json with status cancelled), then
SIGKILL after 10 s. The container stays until xrun rm.

A sweep split over several jobs (submit --split) is cancelled part by part,
and what its parts ran is gathered into the job's results.

Examples:
  xrun cancel 3fa1` + foundOnHost,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "cancel another user's job too", Destination: &o.force}},
	}, nil, func(ctx context.Context, m *job.Manager, j *store.Job) error {
		return runCancel(ctx, a, o, m, j)
	})
}

func runCancel(ctx context.Context, a *App, o cancelOptions, m *job.Manager, j *store.Job) error {
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
