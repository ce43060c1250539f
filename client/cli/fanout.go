package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/report"
)

// runSubmitFanout submits the experiment to every host at once. Each
// host's progress goes to stderr prefixed with its name; a host that fails
// is reported for that host and the others go on. Attached, the results
// of each host follow on stdout, then their comparison; detached, one
// "JOB<TAB>HOST" line per host that started its job.
func runSubmitFanout(ctx context.Context, a *App, o submitOptions, hostList []string) error {
	seen := map[string]bool{}
	for _, h := range hostList {
		if seen[h] {
			return usageError("--host %s is given twice: give each host once", h)
		}
		seen[h] = true
	}
	type outcome struct {
		job *store.Job
		out string
	}
	res := job.FanOut(ctx, hostList, a.Err, func(ctx context.Context, h string, w io.Writer) (outcome, error) {
		var got outcome
		oh := o
		oh.Where = connect.Selection{Host: h}
		r, err := a.submitRequest(ctx, oh, w)
		if err != nil {
			return got, err
		}
		m, err := a.Jobs()
		if err != nil {
			return got, err
		}
		// Each host's progress and log go to its prefixed lines, its
		// results to its own section of stdout.
		m.Err, m.ErrTTY = w, nil
		m.OnJob = func(j *store.Job) { got.job = j }
		var out bytes.Buffer
		_, err = a.submit(ctx, m, r, oh, submitStreams{out: &out, err: w})
		got.out = out.String()
		var ee *contract.ExitError
		if errors.As(err, &ee) && ee.Err == nil && got.job != nil {
			// A job's own exit code carries no message; say what ended.
			err = &contract.ExitError{Code: ee.Code, Err: fmt.Errorf("job %s ended %s (exit %d)", got.job.ID, got.job.Status, ee.Code)}
		}
		return got, err
	})

	var started []*store.Job
	for _, r := range res {
		if r.Value.job != nil && r.Value.job.ContainerID != "" {
			started = append(started, r.Value.job)
		}
	}
	switch {
	case o.json:
		if started == nil {
			started = []*store.Job{}
		}
		if err := render.JSON(a.Out, started); err != nil {
			return err
		}
	case o.Detach:
		for _, r := range res {
			if r.Err == nil && r.Value.job != nil {
				fmt.Fprintf(a.Out, "%s\t%s\n", r.Value.job.ID, r.Host)
			}
		}
	default:
		for _, r := range res {
			if r.Value.out == "" {
				continue
			}
			fmt.Fprintf(a.Out, "== %s ==\n%s\n", r.Host, strings.TrimRight(r.Value.out, "\n"))
		}
		a.printFanoutComparison(ctx, started)
	}

	code := 0
	var failed []string
	for _, r := range res {
		if r.Err == nil {
			continue
		}
		c := contract.ExitInfra
		var ee *contract.ExitError
		if errors.As(r.Err, &ee) {
			c = ee.Code
		}
		if code == 0 {
			code = c
		}
		failed = append(failed, r.Host)
	}
	if code != 0 {
		return &contract.ExitError{Code: code, Err: fmt.Errorf("%d of %d hosts failed (%s): see their lines above", len(failed), len(res), strings.Join(failed, ", "))}
	}
	return nil
}

// printFanoutComparison lines up the results of the jobs that have some.
func (a *App) printFanoutComparison(ctx context.Context, js []*store.Job) {
	var in []report.CompareInput
	for _, j := range js {
		if _, r, _, err := a.jobResults(ctx, j.ID); err == nil {
			in = append(in, report.CompareInput{JobID: j.ID, Host: j.Host, Results: r})
		}
	}
	if len(in) < 2 {
		return
	}
	rep, err := report.Compare(in)
	if err != nil {
		return
	}
	fmt.Fprintln(a.Out, "== comparison ==")
	rep.Text(a.Out)
}
