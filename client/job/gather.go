package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/client/flat"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

// A sweep split over several jobs (xrun submit --split N) runs as N part
// jobs, each an ordinary job of its backend that runs every Nth case
// (result.Split). The job they are gathered into has no record until
// Gather writes it, once every part has ended: its results are the whole
// sweep's (analyze.Gather), its log the parts' logs one after the other,
// and it ran nowhere itself (store.Job.Parts).

// PartsError says that a job reference names a gathered job whose parts
// have not been gathered yet (Resolve): xrun wait gathers them.
type PartsError struct {
	ID    string
	Parts []*store.Job
}

func (e *PartsError) Error() string {
	var states []string
	for _, p := range e.Parts {
		states = append(states, fmt.Sprintf("%s %s (part %s)", p.ID, p.Status, p.Split))
	}
	return fmt.Sprintf("job %s is a sweep split over %d jobs whose results are not gathered yet: %s; `xrun wait %s` waits for them and gathers their results", e.ID, len(e.Parts), strings.Join(states, ", "), e.ID)
}

// partsOf returns the part jobs of gathered job ref (a prefix of its id),
// in part order; nil when no job of the store is a part of one.
func (m *Manager) partsOf(ref string) (string, []*store.Job, error) {
	if ref == "" {
		return "", nil, nil
	}
	jobs, err := m.Store.List()
	if err != nil {
		return "", nil, err
	}
	id := ""
	var parts []*store.Job
	for _, j := range jobs {
		if j.SplitOf == "" || !strings.HasPrefix(j.SplitOf, ref) {
			continue
		}
		if id != "" && j.SplitOf != id {
			return "", nil, &store.AmbiguousError{Ref: ref, Candidates: []string{id, j.SplitOf}}
		}
		id = j.SplitOf
		parts = append(parts, j)
	}
	slices.SortFunc(parts, func(a, b *store.Job) int { return partNumber(a) - partNumber(b) })
	return id, parts, nil
}

func partNumber(j *store.Job) int {
	sp, err := result.ParseSplit(j.Split)
	if err != nil || sp == nil {
		return 0
	}
	return sp.Part
}

// Gather waits for every part of gathered job id to end (progress on
// m.Err), then gathers their results and logs into its record and returns
// it. A job gathered already is returned as it is.
func (m *Manager) Gather(ctx context.Context, id string) (*store.Job, error) {
	if j, err := m.Store.Load(id); err == nil {
		return j, nil
	}
	_, parts, err := m.partsOf(id)
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, &store.NotFoundError{Ref: id}
	}
	sp, err := result.ParseSplit(parts[0].Split)
	if err != nil || sp == nil {
		return nil, fmt.Errorf("job %s, a part of %s, says it is part %q: its record was edited", parts[0].ID, id, parts[0].Split)
	}
	for i, p := range parts {
		if partNumber(p) != i+1 {
			return nil, fmt.Errorf("part %d/%d of job %s is not in this job store (was it removed?): %d of its parts are; their results cannot be gathered into the whole sweep", i+1, sp.Parts, id, len(parts))
		}
	}
	if len(parts) != sp.Parts {
		return nil, fmt.Errorf("part %d/%d of job %s is not in this job store (was it removed?): its results cannot be gathered into the whole sweep", len(parts)+1, sp.Parts, id)
	}
	for _, p := range parts {
		if store.Final(p.Status) {
			continue
		}
		fmt.Fprintf(m.Err, "waiting for job %s (part %s, %s)\n", p.ID, p.Split, p.Status)
		if err := m.Wait(ctx, p); err != nil {
			return nil, err
		}
		fmt.Fprintf(m.Err, "job %s (part %s) %s\n", p.ID, p.Split, p.Status)
	}
	return m.gather(id, parts)
}

// gather writes gathered job id from its ended parts.
func (m *Manager) gather(id string, parts []*store.Job) (*store.Job, error) {
	first := parts[0]
	s, err := spec.Load(first.ExperimentDir)
	if err != nil {
		return nil, fmt.Errorf("gather job %s: read the spec its parts ran: %w", id, err)
	}
	if s.Hash != first.SpecHash {
		return nil, fmt.Errorf("gather job %s: %s changed since its parts ran (spec %s, now %s): the criteria are judged with the spec the parts ran; put it back, or compare the parts with `xrun compare`", id, s.Path, short(first.SpecHash), short(s.Hash))
	}
	var docs []*result.Results
	var jobs []result.SplitJob
	machine := ""
	for i, p := range parts {
		r, err := m.partResults(p, s, i+1, len(parts))
		if err != nil {
			return nil, err
		}
		sj := result.SplitJob{Part: i + 1, JobID: p.ID, Host: p.Host, Status: p.Status}
		for _, g := range r.Env.GPUs {
			sj.GPUs = append(sj.GPUs, g.Name)
		}
		if analyze.RanACase(r) {
			// The parts must be one kind of machine, as a series of the
			// history is: else their cases are not one run's.
			mc := machineOf(r)
			if machine == "" {
				machine = mc
			} else if mc != machine {
				return nil, fmt.Errorf("gather job %s: its parts ran on different kinds of machine (%s; and %s for job %s): their cases are not one run's; compare the parts with `xrun compare %s`", id, machine, mc, p.ID, strings.Join(ids(parts), " "))
			}
		}
		docs, jobs = append(docs, r), append(jobs, sj)
	}
	r, err := analyze.Gather(s, id, docs, jobs)
	if err != nil {
		return nil, fmt.Errorf("gather job %s: %w", id, err)
	}
	if err := os.MkdirAll(m.Store.Dir(id), 0o755); err != nil {
		return nil, fmt.Errorf("gather job %s: %w", id, err)
	}
	if err := result.WriteFile(m.Store.Results(id), r); err != nil {
		return nil, fmt.Errorf("gather job %s: %w", id, err)
	}
	if err := m.Store.WriteFrom(id, store.LogsFile, func(w io.Writer) error { return m.partLogs(w, parts) }); err != nil {
		return nil, fmt.Errorf("gather job %s: %w", id, err)
	}
	digest, err := m.Store.ResultsDigest(id)
	if err != nil {
		return nil, fmt.Errorf("gather job %s: %w", id, err)
	}
	j := &store.Job{ID: id, Host: first.Host, Experiment: first.Experiment, ExperimentDir: first.ExperimentDir, ImageRef: first.ImageRef,
		ImageID: first.ImageID, SpecHash: first.SpecHash, GPUs: first.GPUs, Mode: first.Mode, Timeout: first.Timeout,
		Created: first.Created, Status: r.Status, Error: r.Error, ResultsSHA256: digest, Owner: first.Owner, Parts: ids(parts),
		// A rerun (xrun rerun, regress --confirm) runs the sweep whole,
		// in one job of the same place.
		Submit: first.Submit}
	for _, p := range parts {
		if p.Created.Before(j.Created) {
			j.Created = p.Created
		}
		if p.Finished != nil && (j.Finished == nil || p.Finished.After(*j.Finished)) {
			j.Finished = p.Finished
		}
	}
	if j.Finished == nil {
		now := time.Now().UTC()
		j.Finished = &now
	}
	if code, ok := contract.ExitOfStatus(j.Status); ok {
		j.ExitCode = &code
	}
	// The record last: until it is there, the job is its parts.
	if err := m.Store.Save(j); err != nil {
		return nil, err
	}
	if m.Finished != nil {
		m.Finished(j)
	}
	return j, nil
}

// partResults are part k of n's results, checked against the digest its
// record keeps; a part that ended without any (it never started) is one
// whose cases did not run, for the reason its record gives.
func (m *Manager) partResults(p *store.Job, s *spec.Spec, k, n int) (*result.Results, error) {
	data, err := m.Store.ReadResults(p)
	if errors.Is(err, os.ErrNotExist) {
		why := p.Error
		if why == "" {
			why = "it left no results"
		}
		status := p.Status
		if status == result.StatusSucceeded || status == result.StatusCriteriaFailed {
			status = result.StatusFailed
		}
		return &result.Results{Split: &result.Split{Part: k, Parts: n}, SpecHash: s.Hash, Experiment: s.Name, Mode: p.Mode,
			CreatedAt: p.Created, FinishedAt: p.Finished, Status: status, Error: why, Implementations: s.Benchmark.Implementations.Names(),
			Baseline: s.Benchmark.BaselineName()}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the results of job %s (part %d/%d): %w", p.ID, k, n, err)
	}
	r, err := result.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("read the results of job %s (part %d/%d): %w", p.ID, k, n, err)
	}
	return r, nil
}

// partLogs writes the parts' logs one after the other, each under a line
// that names it.
func (m *Manager) partLogs(w io.Writer, parts []*store.Job) error {
	for _, p := range parts {
		if _, err := fmt.Fprintf(w, "==> part %s: job %s on %s, %s <==\n", p.Split, p.ID, p.Host, p.Status); err != nil {
			return err
		}
		data, err := os.ReadFile(m.Store.Log(p.ID))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			data = append(data, '\n')
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}

// machineOf is the kind of machine r ran on, as the history keys a series
// by it (client/history.Key): its GPUs' model, the driver's and CUDA's
// majors, the software stack and the clock policy.
func machineOf(r *result.Results) string {
	var gpus []string
	for _, g := range r.Env.GPUs {
		gpus = append(gpus, g.Name)
	}
	fields := []string{strings.Join(gpus, "+"), "driver " + flat.Major(r.Env.Driver), "CUDA " + flat.Major(r.Env.CUDARuntime), flat.StackOf(r), flat.ClockPolicyOf(r)}
	return strings.Join(slices.DeleteFunc(fields, func(f string) bool { return strings.TrimSpace(f) == "" }), ", ")
}

func ids(jobs []*store.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func short(s string) string { return s[:min(len(s), 12)] }
