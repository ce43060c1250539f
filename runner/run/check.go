package run

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"

	"github.com/xrun-dev/xrun/internal/table"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/runner/harness"
	"github.com/xrun-dev/xrun/spec"
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
	m := &rn.rec.r.Methodology
	cmd := harness.First{Params: kc.pj, Seed: kc.seeds[0], WarmMS: TuneWarmMS,
		CheckConfigs: TuneCheckConfigs, CheckRounds: TuneCheckRounds, CheckBudgetMS: TuneCheckBudgetMS,
		CheckWallMS: min(TuneCheckWallMS, float64(rn.timeout.Milliseconds())/4),
		Flush:       !rn.method.NoFlush, RestRatio: m.RestRatio, KernelClockMaxMS: m.KernelClockMaxMS}
	for _, im := range rn.live(kc) {
		w, err := rn.pool.worker(ctx, im)
		var fc *harness.FirstCall
		if err == nil {
			octx, cancel := context.WithTimeout(ctx, rn.timeout)
			fc, err = w.First(octx, cmd)
			cancel()
		}
		if err != nil && rn.pool.fresh.again(ctx, im, "check", err) {
			if w, err = rn.pool.worker(ctx, im); err == nil {
				octx, cancel := context.WithTimeout(ctx, rn.timeout)
				fc, err = w.First(octx, cmd)
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

// The first call's warming and check of autotuned choices (harness
// First): the GPU warms for at most TuneWarmMS until a large product's
// time per call stops falling, and the autotuner's best TuneCheckConfigs
// configs (every config of a kernel that has no more) are timed again in
// TuneCheckRounds interleaved rounds of a batch of TuneCheckBudgetMS each
// (docs/performance.md, "Tuning on a warm GPU, and a checked choice").
// Not only the autotuner's best three: on an H200 at N = 512 its timings
// put the config that ran fastest on the runner's clock fourth or last
// (9.8 and 15.5 us, where it ran 6.2-6.4) in two of six tunings.
const (
	TuneWarmMS        = 2000
	TuneCheckConfigs  = 8
	TuneCheckRounds   = 3
	TuneCheckBudgetMS = 10
	// TuneCheckWallMS bounds the check's rounds after the first (and a
	// quarter of the implementation's timeout does): 15 s, where every
	// round of an H200's GEMM at N = 8192 took under 1 s.
	TuneCheckWallMS = 15000
)

// warmedFrom is how much slower than at its end the warm-up product ran
// in its first batch for the log to say the GPU was cold (5 %).
const warmedFrom = 1.05

// noteFirst records what im's first call at the case said: its autotuned
// kernels' configs with their checks, and a log line for each one tuned,
// checked, and for a GPU that was warmed from cold.
func (rn *runner) noteFirst(kc *kcase, im *impl, fc *harness.FirstCall) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if w := fc.Warm; w != nil && w.LastCall > 0 && w.FirstCall > warmedFrom*w.LastCall {
		rn.logf("%s: warmed the GPU for %.2f s before its first call: a 4096² fp16 product went from %.3g to %.3g ms a call",
			im.name, w.MS/1e3, w.FirstCall, w.LastCall)
	}
	if len(fc.Autotune) == 0 {
		return
	}
	rn.rec.res(kc.idx, im.name).Autotune = fc.Autotune
	for _, a := range fc.Autotune {
		// What the autotuner chose; the check's line says what replaced it.
		chosen := a.Config
		if a.Check != nil && a.Check.Replaced != "" {
			chosen = a.Check.Replaced
		}
		switch a.Source {
		case result.AutotuneTuned:
			rn.logf("%s: autotuned %s: %s of %d configs in %.1f s", im.name, a.Kernel, chosen, len(a.TimingsMS), a.TuningMS/1e3)
		case result.AutotuneCache:
			rn.logf("%s: autotuned %s: %s, from the autotune cache (xrun submit --retune tunes afresh)", im.name, a.Kernel, chosen)
		}
		if c := a.Check; c != nil {
			rn.logf("%s: checked %s on the %s clock (%d rounds: %s): %s", im.name, a.Kernel, c.Clock, c.Rounds, checkTimes(c), c.Note)
		}
	}
}

// checkTimes is a check's medians, fastest first: "128x64x32/w4/s4 6.70
// us, 128x256x64/w8/s3 9.45 us".
func checkTimes(c *result.AutotuneCheck) string {
	labels := make([]string, 0, len(c.TimingsMS))
	for l := range c.TimingsMS {
		labels = append(labels, l)
	}
	sort.Slice(labels, func(i, j int) bool {
		a, b := c.TimingsMS[labels[i]], c.TimingsMS[labels[j]]
		return a < b || (a == b && labels[i] < labels[j])
	})
	ms := make([]float64, len(labels))
	for i, l := range labels {
		ms[i] = c.TimingsMS[l]
	}
	u := table.TimeUnit(ms...)
	parts := make([]string, len(labels))
	for i, l := range labels {
		parts[i] = l + " " + u.Format(ms[i], 4) + " " + u.Name
	}
	return strings.Join(parts, ", ")
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
		// The relative error over the output's scale, ||out - ref|| /
		// ||ref||: the element-wise max |d| / |ref| reads 7 or 339 where a
		// reference element is near zero, and a reader takes it for a failure.
		rn.logf("%s: correct (max abs error %.3g, relative error %.3g as ||out - ref|| / ||ref||)", j.im.name,
			j.corr.MaxAbsError, j.corr.RMSRelError)
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
