package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/backend/kube"
	"github.com/xrun-dev/xrun/client/backends"
	"github.com/xrun-dev/xrun/client/exit"
	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/client/regress/summary"
	"github.com/xrun-dev/xrun/runner/analyze"
	"github.com/xrun-dev/xrun/runner/result"
)

type regressOptions struct {
	refs     []string
	confirm  bool
	env      []string
	json     bool
	markdown bool
	all      bool
	alert    string
	webhook  string
	plot     string
	rule     regress.Rule
}

func newRegressCommand(a *App) *cli.Command {
	o := regressOptions{rule: regress.Default()}
	return &cli.Command{
		Name:      "regress",
		Usage:     "judge runs against their history: regressed, improved, suspect, stable, insufficient, noisy or errored, per timing",
		ArgsUsage: "[JOB|RESULTS...]",
		Description: `Each timing of a run (a job of the store, or a results.json, which joins the
history) is judged against the last --window accepted runs of its series
(docs/regressions.md):

  insufficient  fewer than --min-history runs before it: never an alert
  noisy         it did not converge or the GPU was throttled: never an alert
  errored       the implementation did not run, or ran wrong
  suspect       more than --score robust standard deviations (1.4826 MAD)
                and more than --floor from the baseline's median, slower
                or faster: it waits for confirmation
  regressed     a suspect that the next run of the series confirmed (a
  improved      rerun at once with --confirm, or the next night)
  stable        otherwise

Without arguments, the latest run of each experiment on each kind of
machine. The report counts each status against the number of timings,
lists the timings that are not stable (--all: every one) with the
Mann-Whitney p-value of their kept samples against the last accepted run's
(supporting evidence only), and says how the run came out against the
outcome its experiment declares (criteria with expect: fail).

--confirm reruns a run that has suspects at once, with the options it was
submitted with (its directory, host, the same GPUs, base, labels, and the
--env names, whose values come from this shell; --env adds more), waiting
for busy GPUs, and judges the suspects by the rerun: confirmed, or a
spike. A run from a results.json or a Kubernetes cluster is confirmed by
the next run instead.

Exit codes: 0 no confirmed regression (suspects included); 5 a confirmed
regression (distinct from 1, the criteria failed, and 4, infrastructure,
so that a script can tell them apart); 4 the history, a rerun or the
alert failed; 3 bad arguments.

With a confirmed regression, --alert FILE writes the alert (JSON with a
markdown text; the nightly opens a GitHub issue from it) and --webhook URL
(XRUN_ALERT_WEBHOOK, bearer XRUN_ALERT_TOKEN) posts it.

Examples:
  xrun regress 3fa1
  xrun regress --confirm --markdown 3fa1 >> "$GITHUB_STEP_SUMMARY"
  xrun regress experiments/039-gla-pingpong/results/2026-11-24-h100-xrun-submit
  xrun regress --json | jq '.runs[] | {experiment, counts}'`,
		Flags: []cli.Flag{
			historyFlag(a),
			&cli.BoolFlag{Name: "confirm", Usage: "rerun a run with suspects at once on the same host and GPUs, and judge them by the rerun", Destination: &o.confirm},
			&cli.StringSliceFlag{Name: "env", Aliases: []string{"e"}, Usage: "with --confirm: pass host variable NAME (or NAME=value) to the rerun too"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON", Destination: &o.json},
			&cli.BoolFlag{Name: "markdown", Aliases: []string{"md"}, Usage: "print the report as markdown (a job summary)", Destination: &o.markdown},
			&cli.BoolFlag{Name: "all", Usage: "list every timing, stable ones too", Destination: &o.all},
			&cli.StringFlag{Name: "plot", Usage: "draw the trend of each timing that is not stable or insufficient into `DIR` (PNG and SVG); --markdown links them", Destination: &o.plot},
			&cli.StringFlag{Name: "alert", Usage: "with a confirmed regression, write the alert to `FILE` (JSON)", Destination: &o.alert},
			&cli.StringFlag{Name: "webhook", EnvVars: []string{"XRUN_ALERT_WEBHOOK"}, Usage: "with a confirmed regression, POST the alert to `URL` (bearer XRUN_ALERT_TOKEN)", Destination: &o.webhook},
			&cli.IntFlag{Name: "window", Value: o.rule.Window, Usage: "accepted runs the baseline holds (N)", Destination: &o.rule.Window},
			&cli.IntFlag{Name: "min-history", Value: o.rule.MinHistory, Usage: "fewest runs a judgement needs", Destination: &o.rule.MinHistory},
			&cli.Float64Flag{Name: "score", Value: o.rule.Score, Usage: "robust z-score a suspect exceeds", Destination: &o.rule.Score},
			&cli.Float64Flag{Name: "floor", Value: o.rule.Floor, Usage: "relative change a suspect exceeds as well (0.05: 5 %)", Destination: &o.rule.Floor},
		},
		Action: func(c *cli.Context) error {
			if o.json && o.markdown {
				return usageError("give --json or --markdown, not both")
			}
			if o.rule.Window < 1 || o.rule.MinHistory < 1 || o.rule.MinHistory > o.rule.Window || o.rule.Score < 0 || o.rule.Floor < 0 {
				return usageError("the rule needs 1 <= --min-history <= --window, --score >= 0 and --floor >= 0")
			}
			o.env = c.StringSlice("env")
			if len(o.env) > 0 && !o.confirm {
				return usageError("--env passes variables to the rerun of --confirm: give --confirm too")
			}
			o.refs = c.Args().Slice()
			return runRegress(c.Context, a, o)
		},
	}
}

// ExitRegressed is xrun regress's exit code for a confirmed regression.
const ExitRegressed = exit.Regressed

func runRegress(ctx context.Context, a *App, o regressOptions) error {
	h, err := a.syncedHistory()
	if err != nil {
		return err
	}
	type target struct {
		run history.Run
		r   *result.Results
		j   *jobs.Job
	}
	var targets []target
	if len(o.refs) == 0 {
		runs, err := latestRuns(h)
		if err != nil {
			return err
		}
		if len(runs) == 0 {
			return usageError("the results history is empty: submit a job, or xrun history import PATH")
		}
		st, err := a.Store()
		if err != nil {
			return err
		}
		for _, run := range runs {
			r, j := a.storedResults(st, run.JobID)
			if r == nil && run.Source != history.SourceStore {
				r, _ = result.ReadFile(run.Source)
			}
			targets = append(targets, target{run, r, j})
		}
	}
	for _, ref := range o.refs {
		run, r, j, err := a.historyRun(h, ref)
		if err != nil {
			return err
		}
		targets = append(targets, target{run, r, j})
	}
	rep := &summary.Report{Rule: o.rule}
	infra := error(nil)
	for _, t := range targets {
		judged, err := h.Judge(t.run.JobID, o.rule)
		if err != nil {
			return &ExitError{Code: ExitInfra, Err: err}
		}
		sr := summary.NewRun(t.run, judged)
		if t.r != nil {
			out := analyze.ExpectedOutcome(t.r)
			sr.Outcome = &out
		}
		if o.confirm && len(sr.Suspects()) > 0 {
			if err := a.confirmRun(ctx, h, &sr, t.j, o); err != nil {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s: the suspects of job %s were not rerun: %v", t.run.Experiment, t.run.JobID, err))
				var ee *ExitError
				if !errors.As(err, &ee) || ee.Code == ExitInfra {
					infra = err
				}
			}
		} else if n := len(sr.Suspects()); n > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %d suspect(s) in job %s wait for confirmation: xrun regress --confirm %s reruns them now, or the next run confirms or clears them",
				t.run.Experiment, n, t.run.JobID, t.run.JobID))
		}
		rep.Runs = append(rep.Runs, sr)
	}
	rep.Finish()
	if o.plot != "" {
		if err := a.plotVerdicts(h, rep, o); err != nil {
			return err
		}
	}
	switch {
	case o.json:
		err = rep.JSON(a.Out)
	case o.markdown:
		err = rep.Markdown(a.Out, o.all)
	default:
		err = rep.Text(a.Out, o.all)
	}
	if err != nil {
		return err
	}
	if al := rep.Alert(); al != nil {
		if o.alert != "" {
			if err := al.WriteFile(o.alert); err != nil {
				infra = err
			} else {
				fmt.Fprintf(a.Err, "wrote the alert to %s\n", o.alert)
			}
		}
		if o.webhook != "" {
			if err := al.Post(ctx, o.webhook, a.getenv("XRUN_ALERT_TOKEN")); err != nil {
				infra = err
				fmt.Fprintf(a.Err, "warning: %v\n", err)
			}
		}
	}
	if rep.Regressed > 0 {
		msg := fmt.Sprintf("%d confirmed regression(s)", rep.Regressed)
		if infra != nil {
			msg += fmt.Sprintf("; and %v", infra)
		}
		return &ExitError{Code: ExitRegressed, Err: errors.New(msg)}
	}
	if infra != nil {
		return &ExitError{Code: ExitInfra, Err: infra}
	}
	return nil
}

// plotVerdicts draws the trend of every series whose run is regressed,
// improved, suspect, noisy or errored, into o.plot, and records the
// figures in the report.
func (a *App) plotVerdicts(h *history.Store, rep *summary.Report, o regressOptions) error {
	for ri := range rep.Runs {
		r := &rep.Runs[ri]
		for pi := range r.Points {
			p := &r.Points[pi]
			if st := p.Verdict.Status; st == regress.Stable || st == regress.Insufficient {
				continue
			}
			points, err := h.Points(history.Filter{Series: []int64{p.Series}})
			if err != nil {
				return &ExitError{Code: ExitInfra, Err: err}
			}
			judged, err := h.Walk(points, o.rule)
			if err != nil {
				return &ExitError{Code: ExitInfra, Err: err}
			}
			// The series up to the run (and its rerun), as it was judged.
			last := r.JobID
			if p.Rerun != nil {
				last = r.Rerun
			}
			for i, j := range judged {
				if j.JobID == last {
					judged = judged[:i+1]
					break
				}
			}
			f, err := a.plotSeries(h, judged, o.plot, o.rule)
			if err != nil {
				return err
			}
			p.Figure = f.PNG
		}
	}
	return nil
}

// latestRuns is the latest run of each experiment on each kind of machine
// (GPU model) and host.
func latestRuns(h *history.Store) ([]history.Run, error) {
	runs, err := h.Runs("")
	if err != nil {
		return nil, &ExitError{Code: ExitInfra, Err: err}
	}
	latest := map[string]history.Run{}
	for _, r := range runs { // in time order: the last one wins
		latest[r.Experiment+"\x00"+r.GPU+"\x00"+r.Host+"\x00"+r.Address] = r
	}
	out := make([]history.Run, 0, len(latest))
	for _, r := range latest {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Experiment != out[j].Experiment {
			return out[i].Experiment < out[j].Experiment
		}
		return out[i].At.Before(out[j].At)
	})
	return out, nil
}

// confirmRun reruns the job of sr with the options it was submitted with,
// on its host and GPUs, and applies the rerun's verdicts to sr's suspects.
func (a *App) confirmRun(ctx context.Context, h *history.Store, sr *summary.Run, j *jobs.Job, o regressOptions) error {
	switch {
	case j == nil:
		return fmt.Errorf("it is not a job of this store (a results.json): the next run confirms or clears them")
	case j.ExperimentDir == "":
		return fmt.Errorf("its record does not say which directory it ran")
	case kube.IsRef(j.Host):
		return fmt.Errorf("it ran on a Kubernetes cluster, which picks the GPU: the next run confirms or clears them")
	}
	so := submitOptions{dir: j.ExperimentDir, host: backends.Selection{Host: j.Host}, cpu: j.Mode == "cpu", queue: true, network: "default"}
	if j.Mode != "cpu" {
		so.gpus = sameGPUs(j.GPUs)
	}
	if d, err := time.ParseDuration(j.Timeout); err == nil && d > 0 {
		so.timeout = d
	}
	if s := j.Submit; s != nil {
		so.base, so.labels, so.root, so.env = s.Base, s.Labels, s.Root, append([]string(nil), s.Env...)
		if s.Network != "" {
			so.network = s.Network
		}
	}
	so.env = append(so.env, o.env...)
	fmt.Fprintf(a.Err, "regress: rerunning job %s (%s) on %s to confirm %d suspect(s)\n", j.ID, j.Experiment, j.Host, len(sr.Suspects()))
	// The rerun is a job like any other: its progress goes to stderr, its
	// table nowhere; its results join the history as it ends.
	var out bytes.Buffer
	child := &App{Out: &out, Err: a.Err, Getenv: a.Getenv, Connect: a.Connect, RunnerFor: a.RunnerFor, StoreRoot: a.StoreRoot,
		HistoryPath: a.HistoryPath, Trace: a.Trace}
	defer child.Close()
	var rerun *jobs.Job
	child.onJob = func(j *jobs.Job) { rerun = j }
	err := runSubmit(ctx, child, so)
	if rerun == nil {
		return err
	}
	st, serr := a.Store()
	if serr != nil {
		return serr
	}
	if !st.Has(rerun.ID, jobs.ResultsFile) {
		if err == nil {
			err = fmt.Errorf("job %s has no results", rerun.ID)
		}
		return fmt.Errorf("rerun job %s: %w", rerun.ID, err)
	}
	if _, ierr := h.ImportJob(st, rerun); ierr != nil {
		return &ExitError{Code: ExitInfra, Err: ierr}
	}
	judged, jerr := h.Judge(rerun.ID, o.rule)
	if jerr != nil {
		return &ExitError{Code: ExitInfra, Err: jerr}
	}
	sr.Confirm(rerun.ID, judged)
	return nil
}

// sameGPUs is the --gpus that asks for the GPUs a job had: its assigned
// indices ("0,2"; "device=1" for one, which a bare 1 would count) or
// UUIDs, else what it asked for.
func sameGPUs(gpus string) string {
	if gpuIDs.MatchString(gpus) && !strings.Contains(gpus, ",") && !strings.HasPrefix(gpus, "GPU-") {
		return "device=" + gpus
	}
	return gpus
}

var gpuIDs = regexp.MustCompile(`^(\d+|GPU-[0-9a-fA-F-]+)(,(\d+|GPU-[0-9a-fA-F-]+))*$`)
