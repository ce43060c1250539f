package nightly

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// RegressOptions say what Regress judges and how it reports.
type RegressOptions struct {
	// Refs are the runs to judge (job ids, results.json files); none: the
	// latest run of each experiment on each kind of machine and host.
	Refs []string
	Rule regress.Rule
	// Rerun, when set, reruns a job with suspects at once (on its host
	// and GPUs) and returns the rerun's record, to confirm or clear them.
	Rerun func(ctx context.Context, j *store.Job) (*store.Job, error)
	// NoConfirm, with Rerun, says why the place a job ran on cannot rerun
	// it at once (connect.Capabilities), empty when it can.
	NoConfirm func(j *store.Job) string
	// JSON and Markdown pick the report's form (neither: text); All lists
	// stable timings too.
	JSON, Markdown, All bool
	// Alert is a file, and Webhook a URL (posted with the bearer
	// WebhookToken), for the alert of a confirmed regression.
	Alert, Webhook, WebhookToken string
	// Plot is a directory for the trend of each timing that is not stable.
	Plot string
}

// Regress judges runs by the rule, prints the report, and exits 5
// (contract.ExitRegressed) with a confirmed regression.
func (n *History) Regress(ctx context.Context, jobs Jobs, o RegressOptions) error {
	rep, failed, err := n.Judge(ctx, jobs, o)
	if err != nil {
		return err
	}
	return n.Emit(ctx, rep, failed, o)
}

// target is a run to judge, with its results (without their cases:
// readHead) when at hand and its job record when the store has one.
type target struct {
	run history.Run
	r   *result.Results
	j   *store.Job
}

// Judge makes Regress's report: the runs o.Refs name (none: the latest
// run of each experiment on each kind of machine and host), judged by
// the rule, their suspects rerun with o.Rerun when set. failed is what
// kept a rerun from confirming suspects (the report's notes say it too).
func (n *History) Judge(ctx context.Context, jobs Jobs, o RegressOptions) (rep *Report, failed error, err error) {
	var targets []target
	if len(o.Refs) == 0 {
		runs, err := latestRuns(n.h)
		if err != nil {
			return nil, nil, err
		}
		if len(runs) == 0 {
			return nil, nil, contract.Usagef("the results history is empty: submit a job, or xrun history import PATH")
		}
		for _, run := range runs {
			r, j := storedResults(jobs.Store, run.JobID)
			if r == nil && run.Source != history.SourceStore {
				r, _ = readHead(run.Source)
			}
			targets = append(targets, target{run, r, j})
		}
	}
	for _, ref := range o.Refs {
		run, r, j, err := n.run(jobs, ref)
		if err != nil {
			return nil, nil, err
		}
		targets = append(targets, target{run, r, j})
	}
	full := func(run history.Run) *result.Results { return fullResults(jobs.Store, run) }
	return n.judge(ctx, jobs, targets, full, o)
}

// JudgeKept is Judge on a history without a job store (xrun serve's):
// the runs of the job ids refs names (none: the latest runs), and no
// rerun. Their results are read by head (without the cases, as Judge
// reads the store's) and, for the advice on timings that never
// converged, by full (the server keeps each post's).
func (n *History) JudgeKept(ctx context.Context, refs []string, head, full func(job string) *result.Results, ru regress.Rule) (*Report, error) {
	var targets []target
	if len(refs) == 0 {
		runs, err := latestRuns(n.h)
		if err != nil {
			return nil, err
		}
		if len(runs) == 0 {
			return nil, contract.Usagef("the results history is empty: its runners have posted nothing yet")
		}
		for _, run := range runs {
			targets = append(targets, target{run: run, r: head(run.JobID)})
		}
	}
	for _, ref := range refs {
		runs, err := n.h.FindRuns(ref)
		if errors.Is(err, history.ErrAmbiguous) {
			return nil, err
		}
		if err != nil {
			return nil, infra(err)
		}
		if len(runs) == 0 {
			return nil, contract.Usagef("job %s is not in the results history (xrun history lists what it has)", ref)
		}
		run := runs[len(runs)-1]
		targets = append(targets, target{run: run, r: head(run.JobID)})
	}
	fullOf := func(run history.Run) *result.Results { return full(run.JobID) }
	rep, _, err := n.judge(ctx, Jobs{}, targets, fullOf, RegressOptions{Rule: ru})
	return rep, err
}

// judge judges targets into a report; full reads a run's results with
// their cases (for the advice on timings that never converged).
func (n *History) judge(ctx context.Context, jobs Jobs, targets []target, full func(history.Run) *result.Results, o RegressOptions) (*Report, error, error) {
	rep := &Report{Rule: o.Rule}
	failed := error(nil)
	for _, t := range targets {
		b := StartRun(t.run)
		if err := n.h.JudgeEach(t.run.JobID, o.Rule, b.Add); err != nil {
			return nil, nil, infra(err)
		}
		sr := b.Done()
		if t.r != nil {
			out := analyze.ExpectedOutcome(t.r)
			sr.Outcome = &out
			if len(sr.NeverConverged) > 0 {
				// The advice reads the cases' timings, which t.r
				// (readHead) has not kept.
				f := full(t.run)
				if f == nil {
					f = t.r
				}
				sr.WithResults(f)
			}
		}
		if o.Rerun != nil && len(sr.Suspects()) > 0 {
			if err := n.confirm(ctx, jobs, &sr, t.j, o); err != nil {
				// Whatever stopped the rerun, the suspects stay unjudged:
				// exit 4, as documented, never 0.
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s: the suspects of job %s were not rerun: %v", t.run.Experiment, t.run.JobID, err))
				failed = err
			}
		} else if n := len(sr.Suspects()); n > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %d suspect(s) in job %s wait for confirmation: xrun regress --confirm %s reruns them now, or the next run confirms or clears them",
				t.run.Experiment, n, t.run.JobID, t.run.JobID))
		}
		rep.Runs = append(rep.Runs, sr)
	}
	rep.Finish()
	return rep, failed, nil
}

// Emit prints rep in o's form, writes and posts its alert, and returns
// exit 5 (contract.ExitRegressed) with a confirmed regression, else exit 4 when
// failed (a rerun) or the alert failed. o.Plot draws from n's history.
func (n *History) Emit(ctx context.Context, rep *Report, failed error, o RegressOptions) error {
	if o.Plot != "" {
		if err := n.plotVerdicts(rep, o); err != nil {
			return err
		}
	}
	var err error
	switch {
	case o.JSON:
		err = rep.JSON(n.Out)
	case o.Markdown:
		err = rep.Markdown(n.Out, o.All)
	default:
		err = rep.Text(n.Out, o.All)
	}
	if err != nil {
		return err
	}
	if al := rep.Alert(); al != nil {
		if o.Alert != "" {
			if err := al.WriteFile(o.Alert); err != nil {
				failed = err
			} else {
				fmt.Fprintf(n.Err, "wrote the alert to %s\n", o.Alert)
			}
		}
		if o.Webhook != "" {
			logf := func(format string, args ...any) { fmt.Fprintf(n.Err, "warning: "+format+"\n", args...) }
			if err := al.Post(ctx, o.Webhook, o.WebhookToken, logf); err != nil {
				failed = err
				fmt.Fprintf(n.Err, "warning: %v\n", err)
			}
		}
	}
	if rep.Regressed > 0 {
		msg := fmt.Sprintf("%d confirmed regression(s)", rep.Regressed)
		if failed != nil {
			msg += fmt.Sprintf("; and %v", failed)
		}
		return &contract.ExitError{Code: contract.ExitRegressed, Err: errors.New(msg)}
	}
	if failed != nil {
		return infra(failed)
	}
	return nil
}

// plotVerdicts draws the trend of every series whose run is regressed,
// improved, suspect, noisy or errored, into o.plot, and records the
// figures in the report.
func (n *History) plotVerdicts(rep *Report, o RegressOptions) error {
	h := n.h
	for ri := range rep.Runs {
		r := &rep.Runs[ri]
		for pi := range r.Points {
			p := &r.Points[pi]
			if st := p.Verdict.Status; st == regress.Stable || st == regress.Insufficient {
				continue
			}
			points, err := h.Points(history.Filter{Series: []int64{p.Series}})
			if err != nil {
				return infra(err)
			}
			judged, err := h.Walk(points, o.Rule)
			if err != nil {
				return infra(err)
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
			changes, err := n.h.ChangePoints(judged[0].SeriesID)
			if err != nil {
				return infra(err)
			}
			f, err := n.plotSeries(judged, o.Plot, o.Rule, changes)
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
		return nil, infra(err)
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

// confirm reruns the job of sr with o.Rerun and applies the rerun's
// verdicts to sr's suspects.
func (n *History) confirm(ctx context.Context, jobs Jobs, sr *Run, j *store.Job, o RegressOptions) error {
	switch {
	case j == nil:
		return fmt.Errorf("it is not a job of this store (a results.json): the next run confirms or clears them")
	case j.ExperimentDir == "":
		return fmt.Errorf("its record does not say which directory it ran")
	case o.NoConfirm != nil && o.NoConfirm(j) != "":
		return fmt.Errorf("%s: the next run confirms or clears them", o.NoConfirm(j))
	}
	fmt.Fprintf(n.Err, "regress: rerunning job %s (%s) on %s to confirm %d suspect(s)\n", j.ID, j.Experiment, j.Host, len(sr.Suspects()))
	rerun, err := o.Rerun(ctx, j)
	if rerun == nil {
		return err
	}
	st := jobs.Store
	if !st.Has(rerun.ID, store.ResultsFile) {
		if err == nil {
			err = fmt.Errorf("job %s has no results", rerun.ID)
		}
		return fmt.Errorf("rerun job %s: %w", rerun.ID, err)
	}
	if _, ierr := n.h.ImportJob(st, rerun); ierr != nil {
		return infra(ierr)
	}
	judged, jerr := n.h.Judge(rerun.ID, o.Rule)
	if jerr != nil {
		return infra(jerr)
	}
	sr.Confirm(rerun.ID, judged)
	return nil
}
