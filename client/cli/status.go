package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/table"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/store"
)

type statusOptions struct {
	ref  jobRef
	json bool
}

func newStatusCommand(a *App) *cli.Command {
	var o statusOptions
	return forOneJob(a, &o.ref, &cli.Command{
		Name:  "status",
		Usage: "show a job's state (and stop it when it ran past its timeout)",
		Description: `Examples:
  xrun status 3fa1
  xrun status --json 3fa1 | jq -r .status` + foundOnHost,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the job record and container state as JSON", Destination: &o.json},
		},
	}, nil, func(ctx context.Context, m *job.Manager, j *store.Job) error {
		return runStatus(ctx, a, o, m, j)
	})
}

func runStatus(ctx context.Context, a *App, o statusOptions, m *job.Manager, j *store.Job) error {
	s := m.Status(ctx, j)
	if o.json {
		return render.JSON(a.Out, s)
	}
	// The error is the experiment's text: no control sequences, wherever
	// the output goes.
	var t table.Table
	row := func(k, v string) {
		if v != "" {
			t.Add(table.Fig(k+":"), table.Text(v))
		}
	}
	row("job", j.ID)
	row("experiment", j.Experiment)
	row("status", j.Status)
	if j.ExitCode != nil {
		row("exit code", exitCodeText(j))
	}
	row("error", j.Error)
	row("host", j.Host)
	if j.Split != "" {
		row("part", fmt.Sprintf("%s of the sweep, gathered into job %s", j.Split, j.SplitOf))
	}
	// What runs the job, in its backend's words; a gathered job ran
	// nowhere itself.
	where, state := connect.Describe(j)
	if len(j.Parts) > 0 {
		where, state = [][2]string{{"parts", strings.Join(j.Parts, " ")}}, "parts' state"
	}
	for _, r := range where {
		row(r[0], r[1])
	}
	row("image", j.ImageRef)
	row("gpus", j.GPUs)
	if j.CPUs != "" {
		row("cpus", j.CPUs)
	}
	row("mode", j.Mode)
	row("timeout", readableDuration(j.Timeout))
	row("created", j.Created.Local().Format(time.RFC3339))
	if j.Finished != nil {
		row("finished", j.Finished.Local().Format(time.RFC3339))
	}
	if j.Status == store.StatusRunning {
		row("progress", lastProgress(ctx, m, j))
	}
	if s.Container != nil {
		row(state, s.Container.State)
		row("because", s.Container.Message)
	} else if store.Final(j.Status) {
		// A job stopped before its runner wrote any (a failed create, a
		// Ctrl-C before the start) has none to point at.
		if m.Store.Has(j.ID, store.ResultsFile) {
			row(state, "not checked (the job is finished and its results are in the store)")
		} else {
			row(state, "not checked (the job is finished; the store has no results of it)")
		}
	}
	row("store", s.StoreDir)
	return t.WriteText(render.SafeAlways(a.Out), "")
}

// readableDuration is a recorded duration ("15m0s") as a person writes it
// ("15m"); anything else as it is.
func readableDuration(s string) string {
	if d, err := time.ParseDuration(s); err == nil {
		return table.Duration(d)
	}
	return s
}

// exitCodeText is the exit code xrun's commands give finished job j (wait,
// results), and the runner's own where that differs (a runner stopped at
// its timeout exits as cancelled, 130; a job its scheduler ended before
// the runner did has none).
func exitCodeText(j *store.Job) string {
	code := 0
	var ee *contract.ExitError
	if err := job.Outcome(j); errors.As(err, &ee) {
		code = ee.Code
	} else if err != nil {
		return fmt.Sprint(*j.ExitCode)
	}
	switch {
	case !store.Final(j.Status) || code == *j.ExitCode:
		return fmt.Sprint(*j.ExitCode)
	case *j.ExitCode < 0:
		return fmt.Sprintf("%d (the runner left none)", code)
	}
	return fmt.Sprintf("%d (the runner's own: %d)", code, *j.ExitCode)
}

// lastProgress is the last progress line of running job j's log, for a
// person, with the time the runner wrote it ("" when the log has none
// yet, or cannot be read).
func lastProgress(ctx context.Context, m *job.Manager, j *store.Job) string {
	var log bytes.Buffer
	if err := m.Logs(ctx, j, backend.LogOptions{Tail: "200"}, &log); err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(log.String(), "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if e, ok := contract.ParseProgress(lines[i]); ok {
			at, _, _ := strings.Cut(lines[i], " ")
			return fmt.Sprintf("%s (logged at %s)", e.Text(e.Elapsed), at)
		}
	}
	return ""
}
