package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/jobs"
)

type rmOptions struct {
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

Examples:
  xrun rm 3fa1
  xrun rm --force 3fa1            # stop it first when it still runs
  xrun rm --keep-record 3fa1`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "remove a running job too", Destination: &o.force},
			&cli.BoolFlag{Name: "keep-record", Usage: "remove the container only; keep the record, results and logs", Destination: &o.keep},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return usageError("rm takes one or more job ids")
			}
			o.jobs = c.Args().Slice()
			return runRm(c.Context, a, o)
		},
	}
}

func runRm(ctx context.Context, a *App, o rmOptions) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	var errs []error
	for _, ref := range o.jobs {
		j, err := a.resolveJob(ref)
		var re *jobs.RecordError
		if errors.As(err, &re) && o.force && !o.keep {
			if err := a.removeUnreadable(ctx, st, re); err != nil {
				errs = append(errs, err)
				continue
			}
			fmt.Fprintln(a.Out, re.ID)
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c, ok, err := a.refresh(ctx, j)
		if err != nil && !errors.Is(err, engine.ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		if ok {
			if !c.Finished() && !o.force {
				errs = append(errs, fmt.Errorf("job %s is %s: cancel it first, or pass --force", j.ID, c.State))
				continue
			}
			e, err := a.jobEngine(ctx, j)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if err := e.Remove(ctx, j.ContainerID, o.force); err != nil && !errors.Is(err, engine.ErrNotFound) {
				errs = append(errs, err)
				continue
			}
		}
		if !o.keep {
			if err := st.Remove(j.ID); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		fmt.Fprintln(a.Out, j.ID)
	}
	return errors.Join(errs...)
}

// removeUnreadable removes a job whose record cannot be read. The job's
// host was in that record, so its containers are looked for, by the job
// label, on the default host alone.
func (a *App) removeUnreadable(ctx context.Context, st *jobs.Store, re *jobs.RecordError) error {
	if e, err := a.Engine(ctx, HostSelection{}); err != nil {
		fmt.Fprintf(a.Err, "warning: job %s: its container, if any, is left: %v\n", re.ID, err)
	} else if cs, err := e.List(ctx, map[string]string{LabelJob: re.ID}, true); err != nil {
		fmt.Fprintf(a.Err, "warning: job %s: its container, if any, is left: %v\n", re.ID, err)
	} else {
		for _, c := range cs {
			if err := e.Remove(ctx, c.ID, true); err != nil && !errors.Is(err, engine.ErrNotFound) {
				return fmt.Errorf("remove container %s of job %s: %w", c.Name, re.ID, err)
			}
		}
	}
	return st.Remove(re.ID)
}
