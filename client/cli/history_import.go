package cli

import (
	"github.com/urfave/cli/v2"
)

type historyImportOptions struct {
	paths []string
	json  bool
}

func newHistoryImportCommand(a *App) *cli.Command {
	var o historyImportOptions
	return &cli.Command{
		Name:      "import",
		Usage:     "add results.json files to the results history (committed results, a nightly's artifacts)",
		ArgsUsage: "PATH...",
		Description: `Each PATH is a results.json, or a directory searched for files named results.json.
A run imported again (the same job id and start) replaces its earlier import.
Finished jobs of the job store join the history without this. Each run is
imported in a transaction of its own: Ctrl-C stops the import, keeps the runs
imported before it and rolls back the one in progress.

Examples:
  xrun history import experiments/039-gla-pingpong/results
  gh run download 1234 -D nightly && xrun history import nightly`,
		Flags: []cli.Flag{
			historyFlag(a),
			&cli.BoolFlag{Name: "json", Usage: "print what was imported as JSON", Destination: &o.json},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return usageError("history import takes one or more results.json files or directories")
			}
			o.paths = c.Args().Slice()
			n, err := a.history()
			if err != nil {
				return err
			}
			st, err := a.Store()
			if err != nil {
				return err
			}
			return n.Import(c.Context, st, o.paths, o.json)
		},
	}
}
