package cli

import (
	"github.com/urfave/cli/v2"
	"github.com/xrun-dev/xrun/client/backends"
)

// oneJob reads the one JOB argument of a command that takes a job through
// findJob, and settles where else to look for it.
func oneJob(c *cli.Context, job *string, host *backends.Selection) error {
	if c.NArg() != 1 {
		return usageError("%s takes one job id (or the start of one), got %d arguments", c.Command.Name, c.NArg())
	}
	*job = c.Args().First()
	host.MoveContextToKube()
	return nil
}
