package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/client/lifecycle"
	"github.com/xrun-dev/xrun/runner/result"
)

type cancelOptions struct {
	// host is where to look for a job this store has no record of (findJob).
	host HostSelection
	job  string
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
		Flags:        hostFlags(&o.host),
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
	j, err := a.findJob(ctx, o.job, o.host)
	if err != nil {
		return err
	}
	st, err := a.Store()
	if err != nil {
		return err
	}
	if j.ContainerID == "" {
		// Being created, or abandoned by a submit that was killed.
		if _, _, err := a.refresh(ctx, j); err != nil {
			return err
		}
		if j.Status == jobs.StatusCreated {
			return &ExitError{Code: ExitUsage, Err: fmt.Errorf("job %s is being created by xrun (pid %d): Ctrl-C in that xrun cancels it, or cancel it once it runs", j.ID, jobs.CreatorPID(j.Creator))}
		}
		fmt.Fprintf(a.Err, "job %s already ended (%s)\n", j.ID, j.Status)
		return nil
	}
	b, err := a.jobBackend(ctx, j)
	if err != nil {
		return err
	}
	ended, err := lifecycle.Cancel(ctx, b, st, j)
	if ended {
		fmt.Fprintf(a.Err, "job %s already ended (%s)\n", j.ID, j.Status)
		return err
	}
	var nr *lifecycle.NotRecordedError
	if errors.As(err, &nr) {
		return &ExitError{Code: ExitInfra, Err: err}
	}
	if err != nil {
		if j.StoppedBy != result.StatusCancelled {
			return err
		}
		// Stopped and recorded; what failed came after (fetching the
		// results), and the next look fetches them again.
		fmt.Fprintf(a.Err, "warning: %v\n", err)
	}
	fmt.Fprintf(a.Err, "cancelled job %s\n", j.ID)
	return nil
}
