package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/internal/text"
	"github.com/xrun-dev/xrun/result"
)

// runSubmitSplit submits the sweep of o as o.split part jobs, one after
// the other and each detached (the first builds what the others reuse),
// then, attached, waits for them and gathers their results into one job
// (job.Manager.Gather). A part that cannot be submitted cancels the parts
// submitted before it: a sweep is gathered whole or not at all.
func runSubmitSplit(ctx context.Context, a *App, o submitOptions) error {
	r, err := a.submitRequest(ctx, o, a.Err)
	if err != nil {
		return err
	}
	n := o.split
	if cases := len(r.Prepared.Spec.Benchmark.Cases(r.Prepared.Mode == "cpu")); cases < n {
		return usageError("--split %d: the %s sweep of %s has %d cases; split it over at most %d jobs", n, r.Prepared.Mode, r.Prepared.Spec.Name, cases, cases)
	}
	m, err := a.Jobs()
	if err != nil {
		return err
	}
	if o.quiet {
		m.Err, m.Backends.KubeLog = io.Discard, io.Discard
	}
	id := store.NewID()
	var parts []*store.Job
	for k := 1; k <= n; k++ {
		rk := r
		rk.Split, rk.SplitOf, rk.Detach = fmt.Sprintf("%d/%d", k, n), id, true
		j, err := m.Submit(ctx, rk)
		if err != nil && !errors.Is(err, job.ErrDetached) {
			if j != nil {
				parts = append(parts, j)
			}
			cancelParts(a, m, parts)
			return fmt.Errorf("part %d/%d of the split sweep was not submitted, so the parts before it were cancelled: %w", k, n, err)
		}
		parts = append(parts, j)
		fmt.Fprintf(a.Err, "part %d/%d: job %s (%s)\n", k, n, j.ID, j.Status)
	}
	if o.Detach {
		if o.json {
			return render.JSON(a.Out, splitSubmitted{ID: id, Parts: parts})
		}
		fmt.Fprintln(a.Out, id)
		fmt.Fprintf(a.Err, "job %s: the sweep split over %d jobs; `xrun wait %s` gathers their results once they end\n", id, n, id)
		return nil
	}
	fmt.Fprintf(a.Err, "job %s: the sweep split over %d jobs; waiting for them (Ctrl-C cancels them all)\n", id, n)
	g, err := m.Gather(ctx, id)
	if err != nil && ctx.Err() != nil {
		// Ctrl-C: as an attached submit does, stop the job, and keep
		// what its parts ran.
		cancelParts(a, m, parts)
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		defer cancel()
		g, err = m.Gather(bg, id)
	}
	if err != nil {
		return err
	}
	switch {
	case o.json:
		if err := render.JSON(a.Out, g); err != nil {
			return err
		}
	case o.quiet:
		fmt.Fprintf(a.Out, "%s %s\n", g.ID, g.Status)
	default:
		if err := a.writeStoredResults(a.Out, g, render.Table, render.Options{}); err != nil && g.Status == result.StatusSucceeded {
			return err
		}
	}
	return job.Outcome(g)
}

// splitSubmitted is what submit --split --detach --json prints.
type splitSubmitted struct {
	ID    string       `json:"id"`
	Parts []*store.Job `json:"parts"`
}

// cancelParts cancels the parts of a split sweep that have not ended,
// each within a minute, saying so on stderr.
func cancelParts(a *App, m *job.Manager, parts []*store.Job) {
	for _, p := range parts {
		if store.Final(p.Status) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := m.Cancel(ctx, p)
		cancel()
		if err != nil {
			fmt.Fprintf(a.Err, "cancel job %s (part %s): %s\n", p.ID, p.Split, text.OneLine(err.Error()))
			continue
		}
		fmt.Fprintf(a.Err, "job %s (part %s) cancelled\n", p.ID, p.Split)
	}
}
