package cli

import (
	"context"
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/jobs"
)

type psOptions struct {
	host HostSelection
	// hosts are every --host given: jobs are listed across them.
	hosts []string
	all   bool
	json  bool
}

func newPsCommand(a *App) *cli.Command {
	var o psOptions
	return &cli.Command{
		Name:  "ps",
		Usage: "list jobs: the running ones, or all with --all",
		Description: `Jobs come from the job store and from the xrun containers on the host (a job
submitted from another machine shows up too, and status, logs, results, wait and
cancel take its id, recording it in this store). State is read from the host; a
host that cannot be reached is an error (exit 4), not an empty list. A record
that cannot be read is listed as unreadable, naming its file (xrun rm -f removes it).

Examples:
  xrun ps
  xrun ps --all --json | jq -r '.[] | select(.status=="failed") | .id'`,
		Flags: append(hostFlags(&o.host),
			&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "list finished jobs too", Destination: &o.all},
			&cli.BoolFlag{Name: "json", Usage: "print the jobs as a JSON array", Destination: &o.json},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageError("ps takes no arguments")
			}
			o.host.kubeSelection()
			o.hosts = c.StringSlice("host")
			if len(o.hosts) > 0 {
				o.host.Host = o.hosts[0]
			}
			return runPs(c.Context, a, o)
		},
	}
}

func runPs(ctx context.Context, a *App, o psOptions) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	// Every host asked about must answer: a listing without one would
	// read as "no jobs there".
	sels := []HostSelection{o.host}
	if len(o.hosts) > 1 {
		sels = nil
		for _, h := range o.hosts {
			sels = append(sels, HostSelection{Host: h})
		}
	}
	var backends []backend.Backend
	for _, sel := range sels {
		b, err := a.selectedBackend(ctx, sel)
		if err != nil {
			return err
		}
		backends = append(backends, b)
	}
	list, err := st.List()
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, j := range list {
		known[j.ID] = true
		if j.Status == jobs.StatusUnreadable {
			fmt.Fprintf(a.Err, "warning: %s\n", j.Error)
			continue
		}
		if finalStatus(j.Status) && j.Finished != nil {
			continue
		}
		rctx, cancel := quietCtx(ctx)
		a.look(rctx, j)
		cancel()
	}
	// Jobs on the hosts that this store has no record of.
	for _, b := range backends {
		listed, err := b.List(ctx, o.all)
		if err != nil {
			return err
		}
		for _, l := range listed {
			if known[l.Job.ID] {
				continue
			}
			known[l.Job.ID] = true
			list = append(list, unrecorded(l))
		}
	}
	var shown []*jobs.Job
	for _, j := range list {
		if o.all || !finalStatus(j.Status) && j.Status != jobs.StatusRemoved {
			shown = append(shown, j)
		}
	}
	sort.SliceStable(shown, func(x, y int) bool { return shown[x].Created.After(shown[y].Created) })
	if o.json {
		if shown == nil {
			shown = []*jobs.Job{}
		}
		return writeJSON(a.Out, shown)
	}
	tw := tabwriter.NewWriter(a.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB ID\tEXPERIMENT\tSTATUS\tGPUS\tHOST\tCREATED\tIMAGE")
	now := time.Now()
	for _, j := range shown {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Experiment, j.Status, j.GPUs, j.Host, ago(j.Created, now), j.ImageRef)
	}
	return tw.Flush()
}

// unrecorded is the record of a job that the store does not have, from
// what its backend says of it.
func unrecorded(l backend.Listed) *jobs.Job {
	j := l.Job
	switch l.State.Phase {
	case backend.Pending:
		j.Status = jobs.StatusCreated
	case backend.Running:
		j.Status = jobs.StatusRunning
	case backend.Exited:
		// Without its results.json (not copied for a listing) the exit
		// decides, in the same words as a recorded job's.
		j.Status = jobs.FinalStatus(jobs.Outcome{ExitCode: l.State.ExitCode, OOMKilled: l.State.OOMKilled})
		code := l.State.ExitCode
		j.ExitCode = &code
	}
	return &j
}
