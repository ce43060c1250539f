package cli

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/runner/result"
)

type waitOptions struct {
	ref  jobRef
	json bool
}

func newWaitCommand(a *App) *cli.Command {
	var o waitOptions
	return forOneJob(a, &o.ref, &cli.Command{
		Name:  "wait",
		Usage: "wait for a job to end, enforce its timeout, fetch its results, and exit with its code",
		Description: `Exits like an attached submit: 0 succeeded, 1 criteria failed, 2 an
implementation failed, 3 bad job id, 4 infrastructure, 124 timed out, 130
cancelled (see xrun submit --help).

Examples:
  id=$(xrun submit -d experiments/039-gla-pingpong) && xrun wait $id && xrun results $id` + foundOnHost,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the job record as JSON when it ends", Destination: &o.json},
		},
	}, nil, func(ctx context.Context, m *job.Manager, j *jobs.Job) error {
		return runWait(ctx, a, o, m, j)
	})
}

func runWait(ctx context.Context, a *App, o waitOptions, m *job.Manager, j *jobs.Job) error {
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
