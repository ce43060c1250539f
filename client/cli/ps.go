package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/xrun-dev/xrun/client/backends"
	"github.com/xrun-dev/xrun/client/render"
)

type psOptions struct {
	host backends.Selection
	// hosts are every --host given: jobs are listed across them.
	hosts []string
	all   bool
	json  bool
	quiet bool
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
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print the job ids alone, one a line (xrun rm $(xrun ps -a -q))", Destination: &o.quiet},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageError("ps takes no arguments")
			}
			o.host.MoveContextToKube()
			o.hosts = c.StringSlice("host")
			if len(o.hosts) > 0 {
				o.host.Host = o.hosts[0]
			}
			return runPs(c.Context, a, o)
		},
	}
}

func runPs(ctx context.Context, a *App, o psOptions) error {
	m, err := a.Jobs()
	if err != nil {
		return err
	}
	sels := []backends.Selection{o.host}
	if len(o.hosts) > 1 {
		sels = nil
		for _, h := range o.hosts {
			sels = append(sels, backends.Selection{Host: h})
		}
	}
	shown, err := m.List(ctx, sels, o.all, func(msg string) { fmt.Fprintf(a.Err, "warning: %s\n", msg) })
	if err != nil {
		return err
	}
	if o.quiet {
		for _, j := range shown {
			fmt.Fprintln(a.Out, j.ID)
		}
		return nil
	}
	if o.json {
		return render.JSON(a.Out, shown)
	}
	if len(shown) == 0 && a.OutTerminal {
		if o.all {
			_, err := fmt.Fprintln(a.Out, "no jobs")
			return err
		}
		_, err := fmt.Fprintln(a.Out, "no running jobs (xrun ps --all lists finished ones)")
		return err
	}
	tw := tabwriter.NewWriter(a.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB ID\tEXPERIMENT\tSTATUS\tOWNER\tGPUS\tHOST\tCREATED\tIMAGE")
	now := time.Now()
	for _, j := range shown {
		owner := j.Owner
		if owner == "" {
			owner = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Experiment, j.Status, owner, j.GPUs, j.Host, render.Ago(j.Created, now), j.ImageRef)
	}
	return tw.Flush()
}
