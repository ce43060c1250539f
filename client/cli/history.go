package cli

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/nightly"
)

type historyOptions struct {
	query  nightly.Query
	show   nightly.ShowOptions
	server string
}

func newHistoryCommand(a *App) *cli.Command {
	o := historyOptions{show: nightly.ShowOptions{Rule: nightly.DefaultRule()}}
	return &cli.Command{
		Name:      "history",
		Usage:     "list the results history: each series (one implementation at one case on one kind of machine) over time, with the regression rule's verdicts",
		ArgsUsage: "[EXPERIMENT]",
		Description: `Every finished job's results join the history (an SQLite file beside the job
store, $XDG_DATA_HOME/xrun/history.db; --history or XRUN_HISTORY for another),
and so does any results.json given to xrun history import. A series is one
implementation at one case of one experiment on one kind of machine: the GPU
model, the driver's and CUDA's major versions, the base's Python, PyTorch,
Triton and NumPy versions, and the clock policy (the highest SM clock allowed
and the power limit). The host and the GPU's UUID are kept with each run and
can be filtered on (--host, --gpu).

Each run of a series gets the regression rule's verdict (docs/regressions.md):
stable, suspect, regressed, improved, insufficient, noisy or errored. --plot
draws each series' trend with the rule's band (trend-*.png and .svg).

Examples:
  xrun history gla-pingpong --impl pipelined --case T=1024 --case chunk=256
  xrun history --host gpu1 --since 30d --csv > nightly.csv
  xrun history gla-pingpong --plot figures/
  xrun history import experiments/039-gla-pingpong/results
  xrun history accept 3fa1 --note "new tiling, 3 % slower, accepted"
  xrun history rm --before 180d
  xrun history push                 # the finished jobs the config's server lacks
  XRUN_SERVER_TOKEN=... xrun history --server https://xrun.lab.example gla-pingpong`,
		Flags: []cli.Flag{
			historyFlag(a),
			serverFlag(&o.server),
			&cli.StringFlag{Name: "impl", Usage: "only the series of this implementation", Destination: &o.query.Implementation},
			&cli.StringSliceFlag{Name: "case", Usage: "only cases with parameter `K=V` (repeat for several)"},
			&cli.StringFlag{Name: "host", Usage: "only runs on this host (a part of its name or address)", Destination: &o.query.Host},
			&cli.StringFlag{Name: "gpu", Usage: "only runs on this GPU (a part of its model or UUID)", Destination: &o.query.GPU},
			&cli.StringFlag{Name: "since", Usage: "only runs since a date (2026-11-01) or for a time (30d, 12h)", Destination: &o.query.Since},
			&cli.BoolFlag{Name: "json", Usage: "print the series as JSON", Destination: &o.show.JSON},
			&cli.BoolFlag{Name: "csv", Usage: "print one row per run, implementation and case (pandas, W&B, MLflow read it as it is)", Destination: &o.show.CSV},
			&cli.StringFlag{Name: "plot", Usage: "write each series' trend to `DIR` (PNG and SVG)", Destination: &o.show.Plot},
			&cli.IntFlag{Name: "last", Value: 10, Usage: "the table shows each series' `N` latest runs (0: all; the verdicts read every run, and --json and --csv print them all)", Destination: &o.show.Last},
		},
		Subcommands: []*cli.Command{
			newHistoryImportCommand(a),
			newHistoryAcceptCommand(a),
			newHistoryBackupCommand(a),
			newHistoryRmCommand(a),
			newHistoryPushCommand(a),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("history takes at most one experiment name, got %d arguments", c.NArg())
			}
			if o.show.JSON && o.show.CSV {
				return usageError("give --json or --csv, not both")
			}
			o.query.Experiment = c.Args().First()
			o.query.Cases = c.StringSlice("case")
			var err error
			if o.show.Filter, err = o.query.Filter(time.Now()); err != nil {
				return err
			}
			rd, err := a.reader(o.server)
			if err != nil {
				return err
			}
			return rd.show(c.Context, o.query, o.show)
		},
	}
}
