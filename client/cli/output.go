package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/xrun-dev/xrun/client/backends"
)

// writeJSON writes v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

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

// ago renders a time as "3 minutes ago".
func ago(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	n, unit := int(d.Hours()/24), "day"
	switch {
	case d < time.Minute:
		n, unit = int(d.Seconds()), "second"
	case d < time.Hour:
		n, unit = int(d.Minutes()), "minute"
	case d < 48*time.Hour:
		n, unit = int(d.Hours()), "hour"
	}
	if n != 1 {
		unit += "s"
	}
	return fmt.Sprintf("%d %s ago", n, unit)
}
