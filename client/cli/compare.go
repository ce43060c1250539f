package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/report"
	"github.com/xrun-dev/xrun/result"
)

type compareOptions struct {
	jobs     []string
	json     bool
	markdown bool
	force    bool
	server   string
}

func newCompareCommand(a *App) *cli.Command {
	var o compareOptions
	return &cli.Command{
		Name:      "compare",
		Usage:     "line up the results of several jobs side by side (the same experiment on different hosts or GPUs)",
		ArgsUsage: "JOB|RESULTS JOB|RESULTS...",
		Description: `For every sweep point and implementation: each job's median time, its speedup
over its own baseline, its TFLOPS, and the first job's time over its own (above
1x: faster than the first job) with the runner's verdict on it, judged on the
95 % interval of that ratio from the uncertainty of the two medians: FAST or
SLOW when the whole interval is past the fast_threshold margin (the larger of
the two jobs', 2 % by default), SAME when it lies within the margin, AMBIGUOUS
when it reaches across the margin's edge, so that two hosts or two nights can be
told apart from noise; and
each job's host (the machine's name the runner recorded, alike for a job and a
results file, with the alias a job was submitted to: "gpu01 (lab)") and GPU. Jobs of different experiments are refused (exit 3)
unless --force lines up what they share, with a note; jobs with no sweep point in
common are lined up with a note. Results are fetched from the hosts when the store has no
copy yet. A path to a results.json (or to a directory holding one) stands for
the run that wrote it: results committed with an experiment, or a run of the
runner without xrun.

A row's times are on one clock: the kernel clock where every job has it, else
the CUDA events (results from a runner before the kernel clock have the events
alone); a note says so, and says when the jobs' kernel clocks add different
launch costs (methodology.launch_ms), which calls of a few µs differ by.

Examples:
  xrun submit --host lab --host cloud experiments/039-gla-pingpong
  xrun compare 3fa1 9b2e
  xrun compare --markdown 3fa1 9b2e >> experiments/039-gla-pingpong/README.md
  xrun compare experiments/039-gla-pingpong/results/2026-11-22-h100 3fa1`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the comparison as JSON", Destination: &o.json},
			&cli.BoolFlag{Name: "markdown", Aliases: []string{"md"}, Usage: "print markdown tables", Destination: &o.markdown},
			serverFlag(&o.server),
			&cli.BoolFlag{Name: "force", Usage: "compare jobs of different experiments (only what they share lines up)", Destination: &o.force},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() < 2 {
				return usageError("compare takes two or more job ids or results.json paths, got %d", c.NArg())
			}
			if o.json && o.markdown {
				return usageError("give --json or --markdown, not both")
			}
			o.jobs = c.Args().Slice()
			return runCompare(c.Context, a, o)
		},
	}
}

func runCompare(ctx context.Context, a *App, o compareOptions) error {
	rd, err := a.reader(o.server)
	if err != nil {
		return err
	}
	var in []report.CompareInput
	seen := map[string]string{} // job id or results file -> the argument that named it
	same := func(key, ref string) error {
		if first, ok := seen[key]; ok {
			return usageError("%s and %s are the same run: compare lines up different runs", first, ref)
		}
		seen[key] = ref
		return nil
	}
	for _, ref := range o.jobs {
		if path, ok := result.Locate(ref); ok {
			r, err := result.ReadFile(path)
			if err != nil {
				return err
			}
			abs, _ := filepath.Abs(path)
			if err := same(abs, ref); err != nil {
				return err
			}
			in = append(in, report.CompareInput{JobID: ref, Host: r.Env.Host, Results: r})
			continue
		}
		run, err := rd.job(ctx, ref)
		if err != nil {
			return err
		}
		if err := same(run.JobID, ref); err != nil {
			return err
		}
		in = append(in, report.CompareInput{JobID: run.JobID, Host: run.Address, Results: run.Results})
	}
	if !o.force {
		for _, x := range in[1:] {
			if a, b := in[0].Results.Experiment, x.Results.Experiment; a != b {
				return usageError("%s ran %s and %s ran %s: compare lines up runs of one experiment (--force lines up what they share)",
					in[0].JobID, a, x.JobID, b)
			}
		}
	}
	rep, err := report.Compare(in)
	if err != nil {
		return err
	}
	switch {
	case o.json:
		return rep.JSON(a.Out)
	case o.markdown:
		return rep.Markdown(a.Out)
	}
	return rep.Text(a.Out)
}

// jobResults returns a job's results, fetching them from its host into
// the store when the store has no copy yet; a copy recorded when the job
// ended must still match its digest (store.CheckResults). data is the
// store's copy as read.
func (a *App) jobResults(ctx context.Context, ref string) (j *store.Job, r *result.Results, data []byte, err error) {
	m, err := a.Jobs()
	if err != nil {
		return nil, nil, nil, err
	}
	j, err = m.Find(ctx, ref, connect.Selection{})
	if err != nil {
		return nil, nil, nil, err
	}
	st := m.Store
	if err := m.EnsureResults(ctx, j); err != nil {
		return nil, nil, nil, err
	}
	data, err = storedResults(st, j)
	var ee *contract.ExitError
	switch {
	case errors.As(err, &ee):
		return nil, nil, nil, err
	case err != nil:
		return nil, nil, nil, fmt.Errorf("job %s (%s) has no results yet: see `xrun logs %s`", j.ID, j.Status, j.ID)
	}
	r, err = result.Decode(data)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read results of job %s: %w", j.ID, err)
	}
	return j, r, data, nil
}
