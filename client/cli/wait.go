package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

type waitOptions struct {
	ref  jobRef
	json bool
}

func newWaitCommand(a *App) *cli.Command {
	var o waitOptions
	o.ref.parts = func(ctx context.Context, m *job.Manager, pe *job.PartsError) error {
		j, err := m.Gather(ctx, pe.ID)
		if err != nil {
			return err
		}
		return runWait(ctx, a, o, m, j)
	}
	return forOneJob(a, &o.ref, &cli.Command{
		Name:  "wait",
		Usage: "wait for a job to end, enforce its timeout, fetch its results, and exit with its code",
		Description: `Exits like an attached submit: 0 succeeded, 1 criteria failed, 2 an
implementation failed, 3 bad job id, 4 infrastructure, 124 timed out, 130
cancelled (see xrun submit --help).

While it waits it shows the job's progress on stderr (the case, phase and
time left, as logs -f does); stdout gets the job's status alone.

A sweep split over several jobs (submit --split) is waited for part by
part, and its parts' results are then gathered into the job's own.

Examples:
  id=$(xrun submit -d experiments/039-gla-pingpong) && xrun wait $id && xrun results $id` + foundOnHost,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the job record as JSON when it ends", Destination: &o.json},
		},
	}, nil, func(ctx context.Context, m *job.Manager, j *store.Job) error {
		return runWait(ctx, a, o, m, j)
	})
}

func runWait(ctx context.Context, a *App, o waitOptions, m *job.Manager, j *store.Job) error {
	if !store.Final(j.Status) {
		fmt.Fprintf(a.Err, "waiting for job %s (%s on %s); Ctrl-C stops waiting, not the job\n", j.ID, j.Experiment, j.Host)
		stop := followProgress(ctx, a, m, j)
		err := m.Wait(ctx, j)
		stop()
		if err != nil {
			return err
		}
	} else if err := m.Wait(ctx, j); err != nil {
		return err
	}
	if o.json {
		if err := render.JSON(a.Out, j); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(a.Out, j.Status)
	}
	if j.Status == result.StatusSucceeded {
		return nil
	}
	return job.Outcome(j)
}

// followProgress shows the job's progress on stderr while it runs, as
// logs -f does (a status line on a terminal, a line per case and phase
// elsewhere), and nothing else of its log. The returned func stops it.
func followProgress(ctx context.Context, a *App, m *job.Manager, j *store.Job) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	view := render.NewLog(render.NewStatus(a.Err, a.ErrTTY))
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A log that cannot be read only costs the progress: the wait
		// goes on and says how the job ended.
		_ = m.Logs(ctx, j, backend.LogOptions{Follow: true}, &progressOnly{w: view})
	}()
	return func() {
		// The job has ended: its log ends too, with its last progress,
		// unless the backend cannot tell.
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
		cancel()
		<-done
		view.Close()
	}
}

// progressOnly passes on the runner's progress lines of a log and drops
// the rest.
type progressOnly struct {
	w       io.Writer
	partial []byte
}

func (p *progressOnly) Write(b []byte) (int, error) {
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		line := p.partial[:i+1]
		if _, ok := contract.ParseProgress(string(line)); ok {
			if _, err := p.w.Write(line); err != nil {
				return 0, err
			}
		}
		p.partial = p.partial[i+1:]
	}
	return len(b), nil
}
