package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/history"
)

type historyAcceptOptions struct {
	ref   string
	impl  string
	cases []string
	note  string
	list  bool
}

func newHistoryAcceptCommand(a *App) *cli.Command {
	var o historyAcceptOptions
	return &cli.Command{
		Name:      "accept",
		Usage:     "mark a change point: the change a run shows is accepted, and its series start a new baseline there",
		ArgsUsage: "JOB|RESULTS",
		Description: `The regression rule compares a run with the runs of its series since the last
change point, so a slowdown that is meant (a more exact kernel, a new driver)
stops being reported once accepted here, and is judged again once ten runs
after it make a baseline. Every series of the run is marked, or those
--impl and --case pick. --list lists the change points.

Examples:
  xrun history accept 3fa1 --note "fp32 accumulation: 4 % slower, accepted"
  xrun history accept 3fa1 --impl fused --case T=4096
  xrun history accept --list`,
		Flags: []cli.Flag{
			historyFlag(a),
			&cli.StringFlag{Name: "impl", Usage: "only the series of this implementation", Destination: &o.impl},
			&cli.StringSliceFlag{Name: "case", Usage: "only cases with parameter `K=V` (repeat for several)"},
			&cli.StringFlag{Name: "note", Usage: "why the change is accepted", Destination: &o.note},
			&cli.BoolFlag{Name: "list", Usage: "list the change points", Destination: &o.list},
		},
		Action: func(c *cli.Context) error {
			o.cases = c.StringSlice("case")
			if o.list {
				if c.NArg() > 0 {
					return usageError("history accept --list takes no job")
				}
				return runHistoryChanges(a)
			}
			if c.NArg() != 1 {
				return usageError("history accept takes one job id or results.json, got %d arguments", c.NArg())
			}
			o.ref = c.Args().First()
			return runHistoryAccept(a, o)
		},
	}
}

func runHistoryAccept(a *App, o historyAcceptOptions) error {
	cases, err := parseCases(o.cases)
	if err != nil {
		return err
	}
	h, err := a.syncedHistory()
	if err != nil {
		return err
	}
	run, _, _, err := a.historyRun(h, o.ref)
	if err != nil {
		return err
	}
	points, err := h.Points(history.Filter{Job: run.JobID, Implementation: o.impl, Case: cases})
	if err != nil {
		return &ExitError{Code: ExitInfra, Err: err}
	}
	var ids []int64
	for _, p := range points {
		if p.RunID == run.ID {
			ids = append(ids, p.SeriesID)
		}
	}
	if len(ids) == 0 {
		return usageError("job %s has no timing that matches --impl %q and --case %v", run.JobID, o.impl, o.cases)
	}
	n, err := h.MarkChange(ids, run.At, run.JobID, o.note)
	if err != nil {
		return &ExitError{Code: ExitInfra, Err: err}
	}
	fmt.Fprintf(a.Out, "accepted: %d series of %s start a new baseline at job %s (%s)\n", n, run.Experiment, run.JobID, run.At.Format("2006-01-02 15:04 UTC"))
	return nil
}

func runHistoryChanges(a *App) error {
	h, err := a.History()
	if err != nil {
		return err
	}
	changes, err := h.ChangePoints()
	if err != nil {
		return &ExitError{Code: ExitInfra, Err: err}
	}
	var ids []int64
	for id := range changes {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		fmt.Fprintln(a.Err, "no change points")
		return nil
	}
	points, err := h.Points(history.Filter{Series: ids})
	if err != nil {
		return &ExitError{Code: ExitInfra, Err: err}
	}
	for _, ser := range history.Series(points) {
		k := ser[0].Key
		for _, c := range changes[ser[0].SeriesID] {
			fmt.Fprintf(a.Out, "%s  series %d: %s · %s · %s  job %s  %s\n", c.At.Format("2006-01-02 15:04"), c.SeriesID,
				k.Experiment, k.Implementation, k.Case, c.JobID, c.Note)
		}
	}
	return nil
}
