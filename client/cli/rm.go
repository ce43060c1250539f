package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/backend"
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
			o.host.kubeSelection()
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
			if err := a.removeUnreadable(ctx, st, re, o.host); err != nil {
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
		s, ok, err := a.refresh(ctx, j)
		if err != nil && !errors.Is(err, backend.ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		if !ok && j.ContainerID == "" {
			a.rmUnknownContainer(ctx, j)
		}
		if ok {
			if !s.Finished() && !o.force {
				errs = append(errs, fmt.Errorf("job %s is %s: cancel it first, or pass --force", j.ID, j.Status))
				continue
			}
			b, err := a.jobBackend(ctx, j)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if err := b.Remove(ctx, j, o.force); err != nil && !errors.Is(err, backend.ErrNotFound) {
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
// label, on the host sel names (--host, --context, --k8s; else the
// default), and the user is told where.
func (a *App) removeUnreadable(ctx context.Context, st *jobs.Store, re *jobs.RecordError, sel HostSelection) error {
	b, err := a.selectedBackend(ctx, sel)
	if err == nil {
		_, err = removeListed(ctx, b, re.ID, true, func(id string) bool { return id == re.ID })
		switch {
		case errors.Is(err, errNoContainer):
			fmt.Fprintf(a.Err, "job %s: no container of it on %s (if it ran on another host, `xrun rm -f --host HOST %s` there)\n", re.ID, b.Where(), re.ID)
			err = nil
		case err != nil:
			return fmt.Errorf("remove the container of job %s: %w", re.ID, err)
		}
	}
	if err != nil {
		fmt.Fprintf(a.Err, "warning: job %s: its container, if any, is left: %v\n", re.ID, err)
	}
	return st.Remove(re.ID)
}

// rmUnknownContainer removes the container of job j, whose record has
// none: a create that failed or was interrupted can have made one all
// the same (the daemon got the request), found by the job label on the
// job's host. What cannot be looked for is a warning, since the record
// goes either way.
func (a *App) rmUnknownContainer(ctx context.Context, j *jobs.Job) {
	if j.Host == "" {
		return
	}
	b, err := a.jobBackend(ctx, j)
	if err == nil {
		_, err = removeListed(ctx, b, j.ID, true, func(id string) bool { return id == j.ID })
	}
	if err != nil && !errors.Is(err, errNoContainer) {
		fmt.Fprintf(a.Err, "warning: job %s: its container, if any, is left on %s: %v (xrun ps --all lists it)\n", j.ID, j.Host, err)
	}
}

var errNoContainer = errors.New("no container")

// rmUnrecorded removes the container of a job that ps found on the host
// but the store has no record of; ref is its id or a prefix of it. It
// returns the job id, or errNoContainer when no container matches.
func (a *App) rmUnrecorded(ctx context.Context, o rmOptions, ref string) (string, error) {
	b, err := a.selectedBackend(ctx, o.host)
	if err != nil {
		return "", err
	}
	return removeListed(ctx, b, ref, o.force, func(id string) bool { return ref != "" && strings.HasPrefix(id, ref) })
}

// removeListed removes the jobs on b whose id match selects, all of one
// job; running ones only with force.
func removeListed(ctx context.Context, b backend.Backend, ref string, force bool, match func(id string) bool) (string, error) {
	hits, err := findListed(ctx, b, ref, match)
	if err != nil {
		return "", err
	}
	for _, l := range hits {
		if !l.State.Finished() && !force {
			return "", fmt.Errorf("job %s is %s on %s: cancel it first, or pass --force", l.Job.ID, l.State.Detail, b.Where())
		}
		if err := b.Remove(ctx, &l.Job, force); err != nil && !errors.Is(err, backend.ErrNotFound) {
			return "", err
		}
	}
	return hits[0].Job.ID, nil
}
