package cli

import (
	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/nightly"
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
				n, err := a.history()
				if err != nil {
					return err
				}
				return n.Changes()
			}
			if c.NArg() != 1 {
				return usageError("history accept takes one job id or results.json, got %d arguments", c.NArg())
			}
			o.ref = c.Args().First()
			n, err := a.syncedHistory()
			if err != nil {
				return err
			}
			m, err := a.Jobs()
			if err != nil {
				return err
			}
			return n.Accept(nightly.Jobs{Store: m.Store, Resolve: m.Resolve}, o.ref, o.impl, o.cases, o.note)
		},
	}
}
