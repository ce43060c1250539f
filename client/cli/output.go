package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/jobs"
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
func oneJob(c *cli.Context, job *string, host *HostSelection) error {
	if c.NArg() != 1 {
		return usageError("%s takes one job id (or the start of one), got %d arguments", c.Command.Name, c.NArg())
	}
	*job = c.Args().First()
	host.kubeSelection()
	return nil
}

func (a *App) resolveJob(ref string) (*jobs.Job, error) {
	st, err := a.Store()
	if err != nil {
		return nil, err
	}
	j, err := st.Resolve(ref)
	var nf *jobs.NotFoundError
	var amb *jobs.AmbiguousError
	switch {
	case errors.As(err, &nf) || errors.As(err, &amb):
		return nil, &ExitError{Code: ExitUsage, Err: err}
	case err != nil:
		return nil, &ExitError{Code: ExitInfra, Err: err}
	}
	return j, nil
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

// quietCtx bounds a call that must not hang a listing.
func quietCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 30*time.Second)
}
