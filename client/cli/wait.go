package cli

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/backends"
	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/runner/result"
)

type waitOptions struct {
	// host is where to look for a job this store has no record of (findJob).
	host backends.Selection
	job  string
	json bool
}

func newWaitCommand(a *App) *cli.Command {
	var o waitOptions
	return &cli.Command{
		Name:      "wait",
		Usage:     "wait for a job to end, enforce its timeout, fetch its results, and exit with its code",
		ArgsUsage: "JOB",
		Description: `Exits like an attached submit: 0 succeeded, 1 criteria failed, 2 an
implementation failed, 3 bad job id, 4 infrastructure, 124 timed out, 130
cancelled (see xrun submit --help).

Examples:
  id=$(xrun submit -d experiments/039-gla-pingpong) && xrun wait $id && xrun results $id` + foundOnHost,
		Flags: append(hostFlags(&o.host),
			&cli.BoolFlag{Name: "json", Usage: "print the job record as JSON when it ends", Destination: &o.json},
		),
		BashComplete: completeJobs(a),
		Action: func(c *cli.Context) error {
			if err := oneJob(c, &o.job, &o.host); err != nil {
				return err
			}
			return runWait(c.Context, a, o)
		},
	}
}

func runWait(ctx context.Context, a *App, o waitOptions) error {
	m, err := a.Jobs()
	if err != nil {
		return err
	}
	j, err := m.Find(ctx, o.job, o.host)
	if err != nil {
		return err
	}
	if err := m.Wait(ctx, j); err != nil {
		return err
	}
	if o.json {
		if err := render.JSON(a.Out, j); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(a.Out, j.Status)
	}
	if j.Status == result.StatusSucceeded {
		return nil
	}
	return job.Outcome(j)
}
