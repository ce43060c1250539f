package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

type logsOptions struct {
	ref        jobRef
	follow     bool
	tail       string
	timestamps bool
}

func newLogsCommand(a *App) *cli.Command {
	var o logsOptions
	return forOneJob(a, &o.ref, &cli.Command{
		Name:  "logs",
		Usage: "print a job's logs (from its container, or from the job store once it is gone)",
		Description: `With -f the runner's progress lines (case i of N, the implementation being
timed, elapsed time, an estimate of the rest once a case has finished) are a
status line below the log on a terminal, and plain lines elsewhere; without -f
the log is printed as stored (docs/architecture.md, "The runner's log").

Examples:
  xrun logs 3fa1c2
  xrun logs -f --tail 50 3fa1      # follow until the job ends` + foundOnHost,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing until the job ends", Destination: &o.follow},
			&cli.StringFlag{Name: "tail", Aliases: []string{"n"}, Value: "all", Usage: "print only the last N lines", Destination: &o.tail},
			&cli.BoolFlag{Name: "timestamps", Aliases: []string{"t"}, Usage: "prefix each line with its time", Destination: &o.timestamps},
		},
	}, o.check, func(ctx context.Context, m *job.Manager, j *store.Job) error {
		return runLogs(ctx, a, o, m, j)
	})
}

func (o *logsOptions) check() error {
	if o.tail != "all" {
		if n, err := strconv.Atoi(o.tail); err != nil || n < 0 {
			return usageError("--tail %q: give a number of lines or all", o.tail)
		}
	}
	return nil
}

func runLogs(ctx context.Context, a *App, o logsOptions, m *job.Manager, j *store.Job) error {
	// Both of the container's streams go to stdout, as the store's copy
	// does once the container is gone: the runner logs on stderr, and
	// xrun logs ID | grep must see it either way.
	// The log is the experiment's own text: its control sequences are
	// dropped wherever it goes (a pipe into a CI log renders them as a
	// terminal does), its newlines and tabs kept.
	out := render.SafeAlways(a.Out)
	// The runner's progress records become readable lines: followed on a
	// terminal, a status line; otherwise a plain line each time the case
	// or its phase changes (render).
	tty := a.OutTTY
	if !o.follow {
		tty = nil
	}
	view := render.NewLog(render.NewStatus(out, tty))
	defer view.Close()
	out = view
	err := m.Logs(ctx, j, backend.LogOptions{Follow: o.follow, Tail: o.tail, Timestamps: o.timestamps}, out)
	if ctx.Err() != nil && o.follow {
		// Ctrl-C stops the following, not the job: it says so, and exits
		// as an interrupted xrun does (130).
		return &contract.ExitError{Code: contract.ExitCancelled, Err: fmt.Errorf("stopped following; job %s goes on (xrun logs -f %s to follow it again)", j.ID, j.ID)}
	}
	return err
}
