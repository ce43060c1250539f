package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/xrun-dev/xrun/runner/contract"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/jobs"
)

type rmOptions struct {
	// host is where to look for jobs this store has no record of (ps
	// lists those from the host's containers).
	host  HostSelection
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
			&cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "remove a running job too", Destination: &o.force},
			&cli.BoolFlag{Name: "keep-record", Usage: "remove the container only; keep the record, results and logs", Destination: &o.keep},
		),
		BashComplete: completeJobs(a),
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
		var nf *jobs.NotFoundError
		if errors.As(err, &nf) {
			id, herr := a.rmUnrecorded(ctx, o, ref)
			switch {
			case herr == nil:
				fmt.Fprintln(a.Out, id)
			case errors.Is(herr, errNoContainer):
				errs = append(errs, err)
			default:
				errs = append(errs, herr)
			}
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
	} else if cs, err := e.List(ctx, map[string]string{contract.LabelJob: re.ID}, true); err != nil {
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

var errNoContainer = errors.New("no container")

// rmUnrecorded removes the container of a job that ps found on the host
// but the store has no record of; ref is its id or a prefix of it. It
// returns the job id, or errNoContainer when no container matches.
func (a *App) rmUnrecorded(ctx context.Context, o rmOptions, ref string) (string, error) {
	e, err := a.Engine(ctx, o.host)
	if err != nil {
		return "", err
	}
	cs, err := e.List(ctx, map[string]string{contract.LabelJob: ""}, true)
	if err != nil {
		return "", err
	}
	var match []engine.Container
	ids := map[string]bool{}
	for _, c := range cs {
		id := c.Labels[contract.LabelJob]
		if id != "gpu-probe" && ref != "" && strings.HasPrefix(id, ref) {
			match = append(match, c)
			ids[id] = true
		}
	}
	switch {
	case len(match) == 0:
		return "", errNoContainer
	case len(ids) > 1:
		return "", &ExitError{Code: ExitUsage, Err: fmt.Errorf("%q matches %d jobs on %s: give more of the id", ref, len(ids), e.Host())}
	}
	for _, c := range match {
		if !c.Finished() && !o.force {
			return "", fmt.Errorf("job %s is %s on %s: cancel it first, or pass --force", c.Labels[contract.LabelJob], c.State, e.Host())
		}
		if err := e.Remove(ctx, c.ID, o.force); err != nil && !errors.Is(err, engine.ErrNotFound) {
			return "", err
		}
	}
	return match[0].Labels[contract.LabelJob], nil
}
