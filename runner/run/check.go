package run

import (
	"context"
	"errors"
	"sync"

	"github.com/xrun-dev/xrun/runner/harness"
	"github.com/xrun-dev/xrun/runner/result"
	"github.com/xrun-dev/xrun/runner/spec"
)

// models asks every live implementation for the case's work models and
// metrics: the first answer is the case's, one that differs is the
// implementation's own.
func (rn *runner) models(ctx context.Context, kc *kcase) error {
	b := &rn.s.Benchmark
	// A command benchmark owns its models; a Python one has them only when
	// the spec names them.
	if len(b.Command) == 0 && b.Flops == "" && b.Bytes == "" && b.Tokens == "" && b.Metrics == "" {
		return nil
	}
	c := &rn.rec.r.Cases[kc.idx]
	var caseModel *result.Model
	for _, im := range rn.live(kc) {
		w, err := rn.pool.worker(ctx, im)
		if err == nil {
			var m *harness.Models
			octx, cancel := context.WithTimeout(ctx, rn.timeout)
			m, err = w.Models(octx, kc.pj)
			cancel()
			if err == nil {
				ir := rn.rec.res(kc.idx, im.name)
				model := m.Model()
				if caseModel == nil {
					caseModel = &model
					c.Flops, c.Bytes, c.Tokens = model.Flops, model.Bytes, model.Tokens
				} else if model != *caseModel {
					ir.Model = &model
				}
				ir.Metrics = m.Metrics
			}
		}
		if err != nil {
			if stop := rn.fail(ctx, kc, im, "models", err); stop != nil {
				return stop
			}
		}
	}
	rn.rec.write()
	return nil
}

// checkJob is one implementation's correctness check on a case.
type checkJob struct {
	im   *impl
	corr *result.Correctness
	err  error
	// again: it ran out of memory beside the others; check it alone.
	again bool
}

// first makes every live implementation's first call at the case, one
// worker at a time, before the checks run side by side: an autotuner
// (Triton's, TorchInductor's) times its configs in that call, and another
// worker's GPU work beside it would decide its choice (docs/performance.md,
// "Autotuned kernels"). GPU runs of Python implementations only: on a CPU
// nothing tunes, and a command benchmark's worker makes its own calls.
func (rn *runner) first(ctx context.Context, kc *kcase) error {
	if rn.cpu || len(rn.s.Benchmark.Command) > 0 {
		return nil
	}
	for _, im := range rn.live(kc) {
		w, err := rn.pool.worker(ctx, im)
		var fc *harness.FirstCall
		if err == nil {
			octx, cancel := context.WithTimeout(ctx, rn.timeout)
			fc, err = w.First(octx, harness.First{Params: kc.pj, Seed: kc.seeds[0]})
			cancel()
		}
		if err != nil && rn.pool.fresh.again(ctx, im, "check", err) {
			if w, err = rn.pool.worker(ctx, im); err == nil {
				octx, cancel := context.WithTimeout(ctx, rn.timeout)
				fc, err = w.First(octx, harness.First{Params: kc.pj, Seed: kc.seeds[0]})
				cancel()
			}
			rn.pool.fresh.done(ctx, im, err)
		}
		if err != nil {
			if stop := rn.fail(ctx, kc, im, "its first call", err); stop != nil {
				return stop
			}
			continue
		}
		rn.noteFirst(kc, im, fc)
	}
	return nil
}

// noteFirst records what im's first call at the case said: its autotuned
// kernels' configs, and a log line for each one tuned.
func (rn *runner) noteFirst(kc *kcase, im *impl, fc *harness.FirstCall) {
	if len(fc.Autotune) == 0 {
		return
	}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.rec.res(kc.idx, im.name).Autotune = fc.Autotune
	for _, a := range fc.Autotune {
		switch a.Source {
		case result.AutotuneTuned:
			rn.logf("%s: autotuned %s: %s of %d configs in %.1f s", im.name, a.Kernel, a.Config, len(a.TimingsMS), a.TuningMS/1e3)
		case result.AutotuneCache:
			rn.logf("%s: autotuned %s: %s, from the autotune cache (xrun submit --retune tunes afresh)", im.name, a.Kernel, a.Config)
		}
	}
}

// check checks every live implementation against the reference.
func (rn *runner) check(ctx context.Context, kc *kcase) error {
	b := &rn.s.Benchmark
	var jobs []*checkJob
	for _, im := range rn.live(kc) {
		if im.isRef || b.Reference == "" {
			// The reference is right by definition; a command benchmark
			// without a reference checks nothing.
			rn.rec.res(kc.idx, im.name).Status = result.ImplOK
			continue
		}
		jobs = append(jobs, &checkJob{im: im})
	}
	// Every worker checks at the same time: the checks are independent,
	// and on large inputs each spends seconds making inputs and hashing
	// outputs on the host (a third of a 3 x 3 softmax run's wall time when
	// they took turns). Each outcome is recorded as it comes; one that ran
	// out of memory beside the others is checked again alone.
	var wg sync.WaitGroup
	var stop error
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rn.checkOne(ctx, kc, j)
			var he *harness.Error
			if len(jobs) > 1 && ctx.Err() == nil && errors.As(j.err, &he) && he.Kind == harness.KindOOM {
				j.again = true
				return
			}
			rn.mu.Lock()
			defer rn.mu.Unlock()
			if err := rn.applyCheck(ctx, kc, j); err != nil {
				stop = err
			}
		}()
	}
	wg.Wait()
	if stop != nil {
		return stop
	}
	for _, j := range jobs {
		if !j.again {
			continue
		}
		rn.logf("%s: out of memory while checking beside the other implementations: checking it alone", j.im.name)
		rn.checkOne(ctx, kc, j)
		if err := rn.applyCheck(ctx, kc, j); err != nil {
			return err
		}
	}
	return nil
}

// checkOne runs j's check in its worker, and once more with fresh compile
// caches when it fails with the volume's (freshCaches). It touches nothing
// but j, its implementation and worker, and what freshCaches guards, so
// that checks can run concurrently.
func (rn *runner) checkOne(ctx context.Context, kc *kcase, j *checkJob) {
	rn.checkOnce(ctx, kc, j)
	if j.err != nil && rn.pool.fresh.again(ctx, j.im, "check", j.err) {
		rn.checkOnce(ctx, kc, j)
		rn.pool.fresh.done(ctx, j.im, j.err)
	}
}

// checkOnce is checkOne, once.
func (rn *runner) checkOnce(ctx context.Context, kc *kcase, j *checkJob) {
	j.corr, j.err = nil, nil
	w, err := rn.pool.worker(ctx, j.im)
	if err == nil {
		octx, cancel := context.WithTimeout(ctx, rn.timeout)
		j.corr, err = w.Check(octx, harness.Check{Params: kc.pj, Seeds: kc.seeds, Tolerance: tolerance(j.im.spec, &rn.s.Benchmark)})
		cancel()
	}
	j.err = err
}

// applyCheck records a finished check in the results. It returns a non-nil
// error when the whole run must stop (rn.fail).
func (rn *runner) applyCheck(ctx context.Context, kc *kcase, j *checkJob) error {
	if j.err != nil {
		return rn.fail(ctx, kc, j.im, "check", j.err)
	}
	ir := rn.rec.res(kc.idx, j.im.name)
	ir.Correctness = j.corr
	ir.Status = result.ImplOK
	if !j.corr.Passed {
		ir.Status = result.ImplWrong
		ir.Error = "wrong result: " + errorText(j.corr.Reason)
		if j.im.name != rn.s.Benchmark.BaselineName() {
			ir.Error += "; " + notTimedWrong
		}
		rn.logf("%s: WRONG: %s", j.im.name, j.corr.Reason)
	} else {
		rn.logf("%s: correct (max abs error %.3g, max rel error %.3g)", j.im.name, j.corr.MaxAbsError, j.corr.MaxRelError)
	}
	rn.rec.write()
	return nil
}

// notTimedWrong ends the error of an incorrect implementation: an incorrect
// result gets no speed verdict, so its timing is not spent. The baseline is
// timed still, as the others' speedups are over it.
const notTimedWrong = "not timed: an incorrect implementation gets no speed verdict"

// tolerance is the implementation's tolerance, else the benchmark's, else
// nil: the harness's default for each output's dtype.
func tolerance(im spec.Implementation, b *spec.Benchmark) *result.Tolerance {
	for _, t := range []*spec.Tolerance{im.Tolerance, b.Tolerance} {
		if t != nil {
			return &result.Tolerance{Atol: t.Atol, Rtol: t.Rtol}
		}
	}
	return nil
}
