package cli

import (
	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/nightly"
)

func newHistoryRmCommand(a *App) *cli.Command {
	var o nightly.RemoveOptions
	return &cli.Command{
		Name:      "rm",
		Usage:     "remove runs from the results history: the jobs named, or every run before a date",
		ArgsUsage: "[JOB...]",
		Description: `Removes each named job's runs (all of them, when its results were imported
from two starts), and with --before every run that started before a date
(2026-11-01) or an age (90d: older than 90 days), in one transaction.
Series left with no run go too, with their change points.

The history is backed up first beside itself (history.db.<time>.bak; the
path is said on stderr, and in --json's "backup"): copy it back to undo.
A removed job of the job store is not imported again when the history
catches up on the store; xrun history import of its results.json brings it
back. --dry-run lists what would go and changes nothing.

Examples:
  xrun history rm 3fa1 7c20
  xrun history rm --before 2026-06-01 --dry-run
  xrun history rm --before 180d --json`,
		Flags: []cli.Flag{
			historyFlag(a),
			&cli.StringFlag{Name: "before", Usage: "also remove every run that started before `DATE` (2026-11-01) or is older than an age (90d, 12h)", Destination: &o.Before},
			&cli.BoolFlag{Name: "dry-run", Usage: "list the runs that would be removed; change nothing", Destination: &o.DryRun},
			&cli.BoolFlag{Name: "json", Usage: "print the runs removed (and the backup) as JSON", Destination: &o.JSON},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 && o.Before == "" {
				return usageError("history rm takes one or more job ids, --before DATE, or both")
			}
			o.Jobs = c.Args().Slice()
			n, err := a.syncedHistory()
			if err != nil {
				return err
			}
			return n.Remove(o)
		},
	}
}
