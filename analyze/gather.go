package analyze

import (
	"fmt"
	"slices"

	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

// Gather joins the results of the parts of a sweep split over several jobs
// (result.Split) into the results of one run of the whole sweep, as if one
// job had run it: its cases in the sweep's order, then the comparisons,
// criteria, warnings and status computed again over all of them. parts
// are in part order, one for each part; s is the spec they ran (its hash
// must be theirs) and jobs say which job ran each part. The run's
// environment is the first part's; jobs say where the others ran, and a
// warning of a part that the whole sweep's do not repeat is kept,
// prefixed with its part.
//
// A part that did not reach its verdict (cancelled, timed out, failed
// before its cases) makes the gathered run end the same way, with the
// cases of every other part kept.
func Gather(s *spec.Spec, id string, parts []*result.Results, jobs []result.SplitJob) (*result.Results, error) {
	n := len(parts)
	if n == 0 || len(jobs) != n {
		return nil, fmt.Errorf("gather %d parts with %d jobs: give one job per part", n, len(jobs))
	}
	for i, p := range parts {
		switch {
		case p.Split == nil || p.Split.Parts != n || p.Split.Part != i+1:
			return nil, fmt.Errorf("job %s's results are not part %d/%d of a split sweep (%s)", jobs[i].JobID, i+1, n, splitOf(p))
		case p.SpecHash != s.Hash:
			return nil, fmt.Errorf("job %s ran another version of %s (spec %s, not %s)", jobs[i].JobID, s.Name, short(p.SpecHash), short(s.Hash))
		case p.Mode != parts[0].Mode:
			return nil, fmt.Errorf("job %s ran the %s sweep and job %s the %s sweep: gather parts of one sweep", jobs[0].JobID, parts[0].Mode, jobs[i].JobID, p.Mode)
		}
	}
	// The environment is the first part's that ran a case: a part
	// stopped before its first case may not have read its machine.
	first := parts[0]
	for _, p := range parts {
		if RanACase(p) {
			first = p
			break
		}
	}
	r := &result.Results{
		SchemaVersion: result.SchemaVersion, JobID: id, Experiment: first.Experiment, CreatedAt: first.CreatedAt,
		Status: result.StatusRunning, ClientVersion: first.ClientVersion, RunnerVersion: first.RunnerVersion,
		SpecHash: first.SpecHash, Image: first.Image, Env: first.Env, Methodology: first.Methodology, Mode: first.Mode,
		SweepKeys: first.SweepKeys, Implementations: first.Implementations, Baseline: first.Baseline,
		Cases: []result.Case{}, Split: &result.Split{Parts: n, Jobs: jobs},
	}
	r.CreatedAt = parts[0].CreatedAt
	finished := parts[0].FinishedAt
	for _, p := range parts[1:] {
		if p.CreatedAt.Before(r.CreatedAt) {
			r.CreatedAt = p.CreatedAt
		}
		if finished != nil && (p.FinishedAt == nil || p.FinishedAt.After(*finished)) {
			finished = p.FinishedAt
		}
	}
	if finished != nil {
		t := *finished
		r.FinishedAt = &t
	}

	// The cases, in the sweep's order: case i is case i/n of part i%n.
	// One a part never recorded (it stopped before it) is not run.
	all := s.Benchmark.Cases(r.Mode == "cpu")
	varying := spec.VaryingKeys(all)
	for i, params := range all {
		p := parts[i%n]
		if j := i / n; j < len(p.Cases) {
			r.Cases = append(r.Cases, p.Cases[j])
			continue
		}
		r.Cases = append(r.Cases, result.Case{Params: params.Map(), Label: params.Only(varying).Label(), Results: map[string]*result.ImplResult{}})
	}
	for i, p := range parts {
		if want := max(0, (len(all)-i+n-1)/n); len(p.Cases) > want {
			return nil, fmt.Errorf("job %s's results hold %d cases, and part %d/%d of %s's sweep has %d: it ran another sweep", jobs[i].JobID, len(p.Cases), i+1, n, s.Name, want)
		}
		r.Profiles = append(r.Profiles, p.Profiles...)
	}

	// A part that did not reach its verdict decides how the run ended.
	for _, status := range []string{result.StatusCancelled, result.StatusTimeout, result.StatusFailed} {
		for i, p := range parts {
			if p.Status == status && r.Status == result.StatusRunning && (status != result.StatusFailed || p.Error != "" && len(p.Cases) == 0) {
				r.Status, r.Error = status, fmt.Sprintf("part %d/%d (job %s): %s", i+1, n, jobs[i].JobID, orStatus(p.Error, status))
			}
		}
	}
	if r.Status != result.StatusRunning {
		r.Interrupt(r.Names(), r.Error)
	}
	if h := r.Env.HostLoad; h != nil {
		r.Env.HostLoad = HostLoad(r, h.BusyShare)
	}
	r.Comparisons = Comparisons(r, r.Methodology.FastThreshold)
	crit, critOK := Criteria(s, r)
	r.Criteria = crit
	r.Warnings = Warnings(r)
	for i, p := range parts {
		for _, w := range p.Warnings {
			if i > 0 && w.Label == "" {
				w.Message = fmt.Sprintf("part %d/%d (job %s): %s", i+1, n, jobs[i].JobID, w.Message)
			}
			if !slices.Contains(r.Warnings, w) {
				r.Warnings = append(r.Warnings, w)
			}
		}
	}
	Settle(r, critOK)
	return r, nil
}

// Settle gives a run that is still running at its verdict the status its
// results earn: failed when an implementation did not run to the end or
// ran wrong, criteria_failed when critOK is false, else succeeded; a run
// stopped before its verdict keeps its status. Success follows it.
func Settle(r *result.Results, critOK bool) {
	if r.Status == result.StatusRunning {
		switch {
		case AnyFailed(r):
			r.Status = result.StatusFailed
		case !critOK:
			r.Status = result.StatusCriteriaFailed
		default:
			r.Status = result.StatusSucceeded
		}
	}
	r.Success = r.Status == result.StatusSucceeded
}

// AnyFailed reports an implementation (or the reference) of r that did
// not run to the end, or ran wrong.
func AnyFailed(r *result.Results) bool {
	for _, c := range r.Cases {
		for _, ir := range c.Results {
			switch ir.Status {
			case result.ImplOK, result.ImplSkipped:
			default:
				return true
			}
		}
	}
	return false
}

// RanACase reports whether r holds a case with an implementation that
// ran (whose machine the runner read).
func RanACase(r *result.Results) bool {
	for _, c := range r.Cases {
		for _, ir := range c.Results {
			if ir.Status != result.ImplNotRun && ir.Status != result.ImplSkipped {
				return true
			}
		}
	}
	return false
}

func splitOf(r *result.Results) string {
	if r.Split == nil {
		return "it ran the whole sweep"
	}
	if r.Split.Part == 0 {
		return fmt.Sprintf("it is a gather of %d parts", r.Split.Parts)
	}
	return "it is part " + r.Split.String()
}

func short(hash string) string { return hash[:min(len(hash), 12)] }

func orStatus(reason, status string) string {
	if reason != "" {
		return reason
	}
	return status
}
