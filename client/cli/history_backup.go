package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

func newHistoryBackupCommand(a *App) *cli.Command {
	return &cli.Command{
		Name:      "backup",
		Usage:     "write a consistent copy of the results history to FILE, while jobs may be writing to it",
		ArgsUsage: "FILE",
		Description: `The nightly workflow uploads this copy as an artifact, so the history of the
runner's disk can be restored: copy the file to $XDG_DATA_HOME/xrun/history.db
(or point --history or XRUN_HISTORY at it).

Example:
  xrun history backup /tmp/history-$(date +%F).db`,
		Flags: []cli.Flag{historyFlag(a)},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("history backup takes one file to write, got %d arguments", c.NArg())
			}
			h, err := a.syncedHistory()
			if err != nil {
				return err
			}
			if err := h.Backup(c.Args().First()); err != nil {
				return err
			}
			fmt.Fprintf(a.Err, "wrote %s\n", c.Args().First())
			return nil
		},
	}
}
