package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/runner/result"
)

type waitOptions struct {
	// host is where to look for a job this store has no record of (findJob).
	host HostSelection
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

// waitCreated waits while another xrun creates job j (its record has no
// container yet and its submitter runs), reading the record again until
// the job has a container or ended; a submitter that is gone leaves the
// job to refresh, which records it abandoned.
func (a *App) waitCreated(ctx context.Context, j *jobs.Job) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	said := false
	for j.ContainerID == "" && j.Status == jobs.StatusCreated && j.Creator != "" && !jobs.CreatorGone(j.Creator) {
		if !said {
			fmt.Fprintf(a.Err, "job %s is being created by xrun (pid %d): waiting for it to start\n", j.ID, jobs.CreatorPID(j.Creator))
			said = true
		}
		select {
		case <-ctx.Done():
			return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("stopped waiting; job %s is still being created", j.ID)}
		case <-time.After(time.Second):
		}
		fresh, err := st.Load(j.ID)
		if err != nil {
			return err
		}
		*j = *fresh
	}
	return nil
}

// waitEnd brings j up to date and, when it has not ended, waits for it.
func (a *App) waitEnd(ctx context.Context, j *jobs.Job) error {
	s, ok, err := a.refresh(ctx, j)
	if err != nil || !ok || s.Finished() {
		return err
	}
	b, err := a.jobBackend(ctx, j)
	if err != nil {
		return err
	}
	st, err := a.Store()
	if err != nil {
		return err
	}
	return a.waitJob(ctx, b, st, j, s)
}

func runWait(ctx context.Context, a *App, o waitOptions) error {
	j, err := a.findJob(ctx, o.job, o.host)
	if err != nil {
		return err
	}
	if err := a.waitCreated(ctx, j); err != nil {
		return err
	}
	// A host that stops answering (a daemon restart) is waited for too:
	// the job may well go on there.
	pause, said := time.Second, false
	for {
		err := a.waitEnd(ctx, j)
		if err == nil {
			break
		}
		if !unreachable(err) || ctx.Err() != nil {
			return err
		}
		if !said {
			fmt.Fprintf(a.Err, "job %s: %s does not answer (%v): waiting for it to come back (Ctrl-C stops waiting; the job goes on)\n", j.ID, j.Host, firstLine(err.Error()))
			said = true
		}
		select {
		case <-ctx.Done():
			return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("stopped waiting; job %s was last seen %s", j.ID, j.Status)}
		case <-time.After(pause):
		}
		pause = min(2*pause, 15*time.Second)
	}
	if said {
		fmt.Fprintf(a.Err, "job %s: %s answers again\n", j.ID, j.Host)
	}
	if o.json {
		if err := writeJSON(a.Out, j); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(a.Out, j.Status)
	}
	if j.Status == result.StatusSucceeded {
		return nil
	}
	return jobOutcome(j)
}
