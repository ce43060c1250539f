package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/internal/table"
)

type psOptions struct {
	host connect.Selection
	// hosts are every --host given: jobs are listed across them.
	hosts []string
	all   bool
	json  bool
	quiet bool
	// filters are --filter KEY=VALUE, every one of which a job matches;
	// format is --format's template.
	filters []string
	format  string
}

// psFilterKeys are the fields --filter matches, as ps shows them.
var psFilterKeys = map[string]func(j *store.Job) string{
	"status":     func(j *store.Job) string { return j.Status },
	"experiment": func(j *store.Job) string { return j.Experiment },
	"owner":      func(j *store.Job) string { return j.Owner },
	"host":       func(j *store.Job) string { return j.Host },
	"gpus":       func(j *store.Job) string { return j.GPUs },
}

// psFilter is the filters as a test of a job, or a usage error.
func psFilter(filters []string) (func(j *store.Job) bool, error) {
	type cond struct {
		get  func(j *store.Job) string
		want string
	}
	var conds []cond
	for _, f := range filters {
		k, v, ok := strings.Cut(f, "=")
		get := psFilterKeys[k]
		if !ok || get == nil {
			keys := slices.Sorted(maps.Keys(psFilterKeys))
			return nil, usageError("--filter %q: give KEY=VALUE with KEY one of %s", f, strings.Join(keys, ", "))
		}
		conds = append(conds, cond{get, v})
	}
	return func(j *store.Job) bool {
		for _, c := range conds {
			if c.get(j) != c.want {
				return false
			}
		}
		return true
	}, nil
}

// jobDuration is how long job j ran (or has run, until now): from its
// hand-over or start to its end.
func jobDuration(j *store.Job, now time.Time) string {
	from := j.Created
	if j.Started != nil {
		from = *j.Started
	}
	to := now
	if j.Finished != nil {
		to = *j.Finished
	}
	if from.IsZero() || to.Before(from) {
		return "-"
	}
	return table.Duration(to.Sub(from).Round(time.Second))
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

DURATION runs from the job's start (or the hand-over to a standby) to its end,
or to now for a running job.

Examples:
  xrun ps
  xrun ps --all --filter status=failed --filter experiment=my-kernel
  xrun ps --all --format '{{.ID}} {{.Experiment}} {{.Status}}'
  xrun ps --all --json | jq -r '.[] | select(.status=="failed") | .id'`,
		Flags: append(hostFlags(&o.host),
			&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "list finished jobs too", Destination: &o.all},
			&cli.BoolFlag{Name: "json", Usage: "print the jobs as a JSON array", Destination: &o.json},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print the job ids alone, one a line (xrun rm $(xrun ps -a -q))", Destination: &o.quiet},
			&cli.StringSliceFlag{Name: "filter", Usage: "only jobs whose `KEY=VALUE` holds: status, experiment, owner, host or gpus (repeat: every one must hold)"},
			&cli.StringFlag{Name: "format", Usage: "print each job with this Go `TEMPLATE` over its record (the fields of ps --json by their Go names: .ID, .Experiment, .Status, .Owner, .Host, .GPUs, .Created)", Destination: &o.format},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageError("ps takes no arguments")
			}
			o.filters = c.StringSlice("filter")
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
	sels := []connect.Selection{o.host}
	if len(o.hosts) > 1 {
		sels = nil
		for _, h := range o.hosts {
			sels = append(sels, connect.Selection{Host: h})
		}
	}
	keep, err := psFilter(o.filters)
	if err != nil {
		return err
	}
	var tmpl *template.Template
	if o.format != "" {
		if tmpl, err = template.New("format").Option("missingkey=error").Parse(o.format); err != nil {
			return usageError("--format: %v", err)
		}
	}
	listed, err := m.List(ctx, sels, o.all, func(msg string) { fmt.Fprintf(a.Err, "warning: %s\n", msg) })
	if err != nil {
		return err
	}
	shown := listed[:0]
	for _, j := range listed {
		if keep(j) {
			shown = append(shown, j)
		}
	}
	if tmpl != nil {
		for _, j := range shown {
			var b strings.Builder
			if err := tmpl.Execute(&b, j); err != nil {
				return usageError("--format: %v", err)
			}
			fmt.Fprintln(a.Out, b.String())
		}
		return nil
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
	t := table.Table{Columns: table.Heads("JOB ID", "EXPERIMENT", "STATUS", "OWNER", "GPUS", "HOST", "CREATED", "DURATION", "IMAGE")}
	now := time.Now()
	for _, j := range shown {
		t.Add(table.Code(j.ID), table.Text(experimentOf(j)), table.Fig(j.Status), table.Text(table.OrDash(j.Owner)), table.Fig(j.GPUs),
			table.Text(j.Host), table.Fig(render.Ago(j.Created, now)), table.Fig(jobDuration(j, now)), table.Text(j.ImageRef))
	}
	return t.WriteText(a.Out, "")
}

// experimentOf is the experiment a job ran, and for a split sweep which
// part of it the job ran, or how many parts a gathered job holds.
func experimentOf(j *store.Job) string {
	switch {
	case j.Split != "":
		return j.Experiment + " (part " + j.Split + ")"
	case len(j.Parts) > 0:
		return fmt.Sprintf("%s (%d parts)", j.Experiment, len(j.Parts))
	}
	return j.Experiment
}
