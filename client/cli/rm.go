package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/store"
)

type rmOptions struct {
	// host is where to look for jobs this store has no record of (ps
	// lists those from the host's containers).
	host  connect.Selection
	jobs  []string
	force bool
	keep  bool
	// finished removes every finished job of the store (the user's own
	// unless allUsers) that ended more than olderThan ago.
	finished  bool
	olderThan time.Duration
	allUsers  bool
	dryRun    bool
}

func newRmCommand(a *App) *cli.Command {
	var o rmOptions
	return &cli.Command{
		Name:      "rm",
		Usage:     "remove jobs' containers and records",
		ArgsUsage: "JOB... | --finished",
		Description: `Results and logs are fetched into the store before the container goes; with
--keep-record the record (and its results) stay, so xrun results still works.
A job this store has no record of (submitted from another machine or with
another XDG_DATA_HOME, listed by xrun ps from its container) is found by its
container's job label on the host, and its container removed.

Examples:
  xrun rm 3fa1
  xrun rm --force 3fa1            # stop it first when it still runs
  xrun rm --keep-record 3fa1
  xrun rm --host ssh://me@gpu-box 9c2e   # a job listed by xrun ps --host ssh://me@gpu-box
  xrun rm --finished --older-than 72h --dry-run   # what would go
  xrun rm --finished                     # every finished job of yours

With --finished, the jobs of the store that ended (succeeded, failed, cancelled,
timed out) more than --older-than ago are removed, yours alone unless
--all-users; a summary line on stderr says how many went and how many stay.`,
		Flags: append(hostFlags(&o.host),
			&cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "remove a running job, or another user's, too", Destination: &o.force},
			&cli.BoolFlag{Name: "finished", Usage: "remove every finished job of the store (yours, unless --all-users) instead of named ones", Destination: &o.finished},
			&cli.DurationFlag{Name: "older-than", Usage: "with --finished: only jobs that ended longer ago than this", DefaultText: "any age", Destination: &o.olderThan},
			&cli.BoolFlag{Name: "all-users", Usage: "with --finished: other users' jobs too", Destination: &o.allUsers},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "with --finished: print the jobs that would be removed (id, experiment, status, when it ended), and remove none", Destination: &o.dryRun},
			&cli.BoolFlag{Name: "keep-record", Usage: "remove the container only; keep the record, results and logs", Destination: &o.keep},
		),
		BashComplete: completeJobs(a),
		Action: func(c *cli.Context) error {
			if o.finished {
				if c.NArg() > 0 {
					return usageError("rm --finished takes no job ids: it picks the finished jobs itself")
				}
				return runRmFinished(c.Context, a, o)
			}
			if o.olderThan != 0 || o.allUsers || o.dryRun {
				return usageError("--older-than, --all-users and --dry-run go with --finished")
			}
			if c.NArg() == 0 {
				return usageError("rm takes one or more job ids, or --finished")
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

// runRmFinished removes the store's finished jobs that o selects, and
// says on stderr how many went and how many stay.
func runRmFinished(ctx context.Context, a *App, o rmOptions) error {
	if o.olderThan < 0 {
		return usageError("--older-than %s: give a duration >= 0", o.olderThan)
	}
	m, err := a.Jobs()
	if err != nil {
		return err
	}
	list, err := m.Store.List()
	if err != nil {
		return err
	}
	me := store.CurrentUser()
	now := time.Now()
	var picked []*store.Job
	for _, j := range list {
		switch {
		case !store.Final(j.Status) || j.Finished == nil:
		case now.Sub(*j.Finished) < o.olderThan:
		case !o.allUsers && j.Owner != "" && j.Owner != me:
		default:
			picked = append(picked, j)
		}
	}
	var errs []error
	removed := 0
	for _, j := range picked {
		if o.dryRun {
			// Each job as a person checks it before the real run: what it
			// ran, how it ended and when.
			fmt.Fprintf(a.Out, "%s  %s  %s  ended %s\n", j.ID, j.Experiment, j.Status, render.Ago(*j.Finished, now))
			continue
		}
		id, err := m.Remove(ctx, j.ID, job.RemoveOptions{Where: o.host, Force: o.allUsers, KeepRecord: o.keep})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
		fmt.Fprintln(a.Out, id)
	}
	if o.dryRun {
		fmt.Fprintf(a.Err, "would remove %d of %d jobs (dry run: none removed)\n", len(picked), len(list))
	} else {
		fmt.Fprintf(a.Err, "removed %d of %d jobs; %d left\n", removed, len(list), len(list)-removed)
	}
	return errors.Join(errs...)
}
