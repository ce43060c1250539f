package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/jobs"
)

type resultsOptions struct {
	// host is where to look for a job this store has no record of (findJob).
	host     HostSelection
	job      string
	json     bool
	markdown bool
}

func newResultsCommand(a *App) *cli.Command {
	var o resultsOptions
	return &cli.Command{
		Name:      "results",
		Usage:     "print a job's results: a table, results.json, or the markdown tables of an experiment report",
		ArgsUsage: "JOB",
		Description: `Fetches results.json from the container when the store has no copy yet (a
running job gives its partial results). Exits like xrun wait: 0 when the job
succeeded, else its status's code (1 criteria failed, 2 failed, 124 timed out,
130 cancelled), after printing the results it has.

Examples:
  xrun results 3fa1
  xrun results --markdown 3fa1 >> experiments/039-gla-pingpong/README.md
  xrun results --json 3fa1 | jq '.comparisons[] | {label, speedup, verdict}'` + foundOnHost,
		Flags: append(hostFlags(&o.host),
			&cli.BoolFlag{Name: "json", Usage: "print results.json as it is", Destination: &o.json},
			&cli.BoolFlag{Name: "markdown", Aliases: []string{"md"}, Usage: "print markdown tables with ✅/❌ criteria", Destination: &o.markdown},
		),
		BashComplete: completeJobs(a),
		Action: func(c *cli.Context) error {
			if err := oneJob(c, &o.job, &o.host); err != nil {
				return err
			}
			if o.json && o.markdown {
				return usageError("give --json or --markdown, not both")
			}
			return runResults(c.Context, a, o)
		},
	}
}

func runResults(ctx context.Context, a *App, o resultsOptions) error {
	j, err := a.findJob(ctx, o.job, o.host)
	if err != nil {
		return err
	}
	st, err := a.Store()
	if err != nil {
		return err
	}
	if !st.Has(j.ID, jobs.ResultsFile) {
		if err := a.ensureResults(ctx, j); err != nil {
			return err
		}
		if !st.Has(j.ID, jobs.ResultsFile) {
			err := fmt.Errorf("job %s (%s) has no results: its runner has not written results.json (see `xrun logs %s`)", j.ID, j.Status, j.ID)
			var ee *ExitError
			if errors.As(jobOutcome(j), &ee) && finalStatus(j.Status) {
				return &ExitError{Code: ee.Code, Err: err}
			}
			return err
		}
	}
	format := "text"
	switch {
	case o.json:
		format = "json"
	case o.markdown:
		format = "markdown"
	}
	if err := a.printStoredResults(j, format); err != nil {
		return err
	}
	// The table alone can read as a pass (criteria met by the cases that
	// ran): a job that did not succeed says so and exits with its code.
	if !finalStatus(j.Status) {
		fmt.Fprintf(a.Err, "job %s is %s: these results are partial\n", j.ID, j.Status)
		return nil
	}
	return jobOutcome(j)
}
