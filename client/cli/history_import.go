package cli

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/render"
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
Finished jobs of the job store join the history without this.

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
			return runHistoryImport(a, o)
		},
	}
}

func runHistoryImport(a *App, o historyImportOptions) error {
	h, err := a.History()
	if err != nil {
		return err
	}
	all := []history.Imported{}
	for _, p := range o.paths {
		ims, err := h.ImportFile(p)
		all = append(all, ims...)
		if err != nil {
			return &ExitError{Code: ExitUsage, Err: err}
		}
	}
	if o.json {
		return render.JSON(a.Out, all)
	}
	for _, im := range all {
		verb := "imported"
		if im.Replaced {
			verb = "replaced"
		}
		fmt.Fprintf(a.Out, "%s %s: %s, %d timings\n", verb, im.JobID, im.Experiment, im.Points)
	}
	return nil
}
