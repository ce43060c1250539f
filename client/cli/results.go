package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/flat"
	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

type resultsOptions struct {
	ref      jobRef
	json     bool
	markdown bool
	csv      bool
	// plot is a directory for the figures (sweep, roofline).
	plot string
	// expected exits 0 when the outcome is the declared one.
	expected bool
	server   string
}

func newResultsCommand(a *App) *cli.Command {
	var o resultsOptions
	cmd := forOneJob(a, &o.ref, &cli.Command{
		Name:      "results",
		Usage:     "print a job's results (or a results.json's): a table, results.json, markdown tables, CSV, and figures",
		ArgsUsage: "JOB|RESULTS",
		Description: `Fetches results.json from the container when the store has no copy yet (a
running job gives its partial results). Exits like xrun wait: 0 when the job
succeeded, else its status's code (1 criteria failed, 2 failed, 124 timed out,
130 cancelled), after printing the results it has. A path to a results.json
(or to a directory holding one) stands for the run that wrote it: results
committed with an experiment, or a nightly's artifact.

--csv prints one row per implementation and case (experiment, parameters,
implementation, median/q1/q3 ms, TFLOP/s, GB/s, % of peak, bound, GPU,
driver, commit, date), which pandas, W&B and MLflow read as it is; text that
begins with =, +, - or @ (a formula to a spreadsheet) gets a ' in front,
numbers stay as they are. --plot DIR
writes the figures (PNG and SVG): time.* and speedup.* against the swept
parameter, and roofline.* on a GPU the peaks table knows; with --markdown the
report links them.

--expected exits 0 when the outcome is the one the experiment declares
(criteria written with expect: fail failed, every other passed), and says on
stderr what changed otherwise: the nightly is red only for a worse outcome.

Examples:
  xrun results 3fa1
  xrun results --markdown 3fa1 >> experiments/039-gla-pingpong/README.md
  xrun results --json 3fa1 | jq '.comparisons[] | {"label", speedup, verdict}'
  xrun results --csv experiments/039-gla-pingpong/results/2026-11-22-h100 > gla.csv
  xrun results --markdown --plot figures 3fa1 > report.md
  xrun results --expected 3fa1 >/dev/null && echo "as declared"` + foundOnHost,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print results.json as it is", Destination: &o.json},
			&cli.BoolFlag{Name: "markdown", Aliases: []string{"md"}, Usage: "print markdown tables with ✅/❌ criteria", Destination: &o.markdown},
			&cli.BoolFlag{Name: "csv", Usage: "print one CSV row per implementation and case", Destination: &o.csv},
			&cli.StringFlag{Name: "plot", Usage: "write the figures (PNG and SVG) to `DIR`", Destination: &o.plot},
			&cli.BoolFlag{Name: "expected", Usage: "exit 0 when the outcome is the one the experiment declares", Destination: &o.expected},
			serverFlag(&o.server),
		},
	}, o.check, func(ctx context.Context, m *job.Manager, j *store.Job) error {
		return runResults(ctx, a, o, m, j)
	})
	// A path to a results.json stands for the run that wrote it.
	cmd.ArgsUsage = "JOB|RESULTS"
	byJob := cmd.Action
	cmd.Action = func(c *cli.Context) error {
		if o.server != "" && c.NArg() == 1 {
			if _, ok := result.Locate(c.Args().First()); !ok {
				if err := o.check(); err != nil {
					return err
				}
				return runResultsServer(c.Context, a, c.Args().First(), o)
			}
		}
		if c.NArg() == 1 {
			if path, ok := result.Locate(c.Args().First()); ok {
				if err := o.check(); err != nil {
					return err
				}
				return runResultsFile(a, path, o)
			}
		}
		return byJob(c)
	}
	return cmd
}

func (o *resultsOptions) check() error {
	n := 0
	for _, b := range []bool{o.json, o.markdown, o.csv} {
		if b {
			n++
		}
	}
	if n > 1 {
		return usageError("give one of --json, --markdown and --csv")
	}
	return nil
}

func runResults(ctx context.Context, a *App, o resultsOptions, m *job.Manager, j *store.Job) error {
	st := m.Store
	if !st.Has(j.ID, store.ResultsFile) {
		if err := m.EnsureResults(ctx, j); err != nil {
			return err
		}
		if !st.Has(j.ID, store.ResultsFile) {
			err := fmt.Errorf("job %s (%s) has no results: its runner has not written results.json (see `xrun logs %s`)", j.ID, j.Status, j.ID)
			var ee *contract.ExitError
			if errors.As(job.Outcome(j), &ee) && store.Final(j.Status) {
				return &contract.ExitError{Code: ee.Code, Err: err}
			}
			return err
		}
	}
	// The store's copy, as recorded when the job ended: a changed one is
	// refused rather than shown.
	data, err := storedResults(st, j)
	if err != nil {
		return err
	}
	var r *result.Results
	if o.plot != "" || o.expected {
		if r, err = result.Decode(data); err != nil {
			return fmt.Errorf("read results of job %s: %w", j.ID, err)
		}
	}
	ro := render.Options{}
	if o.plot != "" {
		if ro.Figures, err = render.Figures(r, o.plot, a.Err); err != nil {
			return figureError(err)
		}
	}
	if err := writeResults(a.Out, j, data, r, o.format(), ro); err != nil {
		return err
	}
	// The table alone can read as a pass (criteria met by the cases that
	// ran): a job that did not succeed says so and exits with its code.
	if !store.Final(j.Status) {
		fmt.Fprintf(a.Err, "job %s is %s: these results are partial\n", j.ID, j.Status)
		return nil
	}
	if o.expected {
		return a.expectedOutcome(r, job.Outcome(j))
	}
	return job.Outcome(j)
}

func (o resultsOptions) format() render.Format {
	switch {
	case o.json:
		return render.RawJSON
	case o.markdown:
		return render.Markdown
	case o.csv:
		return render.CSV
	}
	return render.Table
}

// runResultsFile prints a results.json as runResults prints a job's, and
// exits with the code of its status.
func runResultsFile(a *App, path string, o resultsOptions) error {
	if o.format() == render.CSV && o.plot == "" {
		// Read case by case: a run at the case cap is 170 MB of JSON.
		r, rows, err := flat.ReadFile(path)
		if err != nil {
			return &contract.ExitError{Code: contract.ExitUsage, Err: fmt.Errorf("%s: %w", path, err)}
		}
		if err := flat.WriteCSV(a.Out, rows); err != nil {
			return err
		}
		outcome := statusOutcome(r.Status, path)
		if o.expected {
			declareFromSpec(r, path, a.Err)
			return a.expectedOutcome(r, outcome)
		}
		return outcome
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return &contract.ExitError{Code: contract.ExitUsage, Err: err}
	}
	r, err := result.Decode(data)
	if err != nil {
		return &contract.ExitError{Code: contract.ExitUsage, Err: fmt.Errorf("%s: %w", path, err)}
	}
	ro := render.Options{}
	if o.plot != "" {
		if ro.Figures, err = render.Figures(r, o.plot, a.Err); err != nil {
			return figureError(err)
		}
	}
	if o.format() == render.RawJSON {
		_, err = a.Out.Write(data)
	} else {
		err = render.Results(a.Out, r, o.format(), ro)
	}
	if err != nil {
		return err
	}
	outcome := statusOutcome(r.Status, path)
	if o.expected {
		declareFromSpec(r, path, a.Err)
		return a.expectedOutcome(r, outcome)
	}
	return outcome
}

// runResultsServer prints the results.json a job posted to the xrun
// serve at o.server as runResults prints the store's copy, and exits with
// the code of its status.
func runResultsServer(ctx context.Context, a *App, ref string, o resultsOptions) error {
	rd, err := a.reader(o.server)
	if err != nil {
		return err
	}
	run, err := rd.job(ctx, ref)
	if err != nil {
		return err
	}
	r := run.Results
	ro := render.Options{}
	if o.plot != "" {
		if ro.Figures, err = render.Figures(r, o.plot, a.Err); err != nil {
			return figureError(err)
		}
	}
	switch o.format() {
	case render.RawJSON:
		_, err = a.Out.Write(run.Data)
	case render.CSV:
		err = flat.WriteCSV(a.Out, flat.Rows(r))
	default:
		err = render.Results(a.Out, r, o.format(), ro)
	}
	if err != nil {
		return err
	}
	outcome := statusOutcome(r.Status, "job "+run.JobID)
	if o.expected {
		return a.expectedOutcome(r, outcome)
	}
	return outcome
}

// figureError is the exit error of render.Figures': a directory it
// cannot write to, or a run with nothing to draw, is the user's to fix.
func figureError(err error) error {
	if errors.Is(err, render.ErrFigureDir) {
		return &contract.ExitError{Code: contract.ExitUsage, Err: err}
	}
	return err
}

// declareFromSpec gives r, a results file written before criteria had
// declared outcomes (expect:), those of its experiment's spec, when the
// file lies inside that experiment's directory (a results/ folder of a
// committed run): the criteria are matched by name. It says so on note.
func declareFromSpec(r *result.Results, path string, note io.Writer) {
	for _, c := range r.Criteria {
		if c.Expect != "" {
			return
		}
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return
	}
	for i := 0; i < 4; i, dir = i+1, filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, spec.FileName)); err != nil {
			continue
		}
		s, err := spec.Load(dir)
		if err != nil || s.Name != r.Experiment {
			return
		}
		expect := map[string]string{}
		for _, c := range s.Criteria {
			expect[c.Name] = result.ExpectPass
			if c.ExpectFail() {
				expect[c.Name] = result.ExpectFail
			}
		}
		n := 0
		for i := range r.Criteria {
			if e, ok := expect[r.Criteria[i].Name]; ok {
				r.Criteria[i].Expect = e
				n++
			}
		}
		if n > 0 {
			fmt.Fprintf(note, "note: the run predates declared outcomes; %d of its %d criteria take theirs from %s by name\n", n, len(r.Criteria), filepath.Join(dir, spec.FileName))
		}
		return
	}
}

// expectedOutcome prints how r came out against its experiment's
// declaration on stderr, and returns nil when nothing came out worse,
// else outcome (the code of r's status).
func (a *App) expectedOutcome(r *result.Results, outcome error) error {
	if !render.Outcome(r, a.Err) {
		return nil
	}
	if outcome == nil {
		return &contract.ExitError{Code: contract.ExitCriteriaFailed, Err: fmt.Errorf("%s: the outcome is worse than the experiment declares", r.Experiment)}
	}
	return outcome
}

// statusOutcome is the exit code of a results file's status, as
// jobOutcome gives a job's.
func statusOutcome(status, what string) error {
	code, ok := contract.ExitOfStatus(status)
	switch {
	case status == result.StatusRunning || code == 0 && ok:
		return nil
	case !ok:
		code = contract.ExitFailed // a status no runner writes
	}
	why := map[string]string{
		result.StatusCriteriaFailed: "the criteria failed",
		result.StatusTimeout:        "the job timed out",
		result.StatusCancelled:      "the job was cancelled",
	}[status]
	if why == "" {
		why = "the job " + status
	}
	return &contract.ExitError{Code: code, Err: fmt.Errorf("%s: %s", what, why)}
}
