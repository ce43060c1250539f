package run

import (
	"context"
	"time"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/runner/gpuinfo"
	"github.com/xrun-dev/xrun/runner/timing"
)

// newLoop is the timing loop of the run's method.
func (rn *runner) newLoop() *timing.Loop {
	m := &rn.rec.r.Methodology
	return timing.New(timing.Config{
		Rule: rn.rule, Rounds: rn.rounds, WarmupMS: rn.warmupMS, Timeout: rn.timeout, CPU: rn.cpu,
		Flush: !rn.method.NoFlush && !rn.cpu, RestRatio: m.RestRatio, KernelClockMaxMS: m.KernelClockMaxMS,
		// The first worker's, once it is ready (noteReady).
		FirstLaunchMS: func() float64 { return m.LaunchMS },
		Logf:          rn.logf,
		Batch:         func(name string) { rn.progress(contract.PhaseTime, name) },
		HostLoad:      rn.hostLoad(),
	})
}

// hostLoad reads the host's load around each batch of a CPU run (on
// Linux): a neighbour's processes slow a CPU timing as a held-back clock
// slows a GPU's. nil where it is not read.
func (rn *runner) hostLoad() func() (timing.HostSample, error) {
	if !rn.cpu {
		return nil
	}
	r, err := timing.NewHostLoad()
	if err != nil {
		rn.logf("the host's load will not be recorded: %v", err)
		return nil
	}
	return r.Read
}

// time runs the case's live implementations through the timing loop, each
// on its worker.
func (rn *runner) time(ctx context.Context, kc *kcase) error {
	var impls []timing.Impl
	for _, im := range rn.live(kc) {
		if ir := rn.rec.r.Cases[kc.idx].Results[im.name]; ir != nil && ir.Status == result.ImplWrong && im.name != rn.s.Benchmark.BaselineName() {
			continue
		}
		impls = append(impls, timing.Impl{Name: im.name, Reference: im.isRef,
			Open: func(ctx context.Context) (timing.Sampler, error) {
				w, err := rn.pool.worker(ctx, im)
				if err != nil {
					return nil, err
				}
				return w, nil
			}})
	}
	c := timing.Case{Params: kc.pj, Seed: kc.seeds[0], Baseline: rn.s.Benchmark.BaselineName()}
	return rn.loop.Case(ctx, c, impls, &caseRecorder{rn: rn, kc: kc})
}

// caseRecorder records the timing loop's findings on one case in the
// results (timing.Recorder).
type caseRecorder struct {
	rn *runner
	kc *kcase
}

func (c *caseRecorder) Timed(name string, from, to time.Time, t *result.Timing) {
	t.Clocks = c.rn.clocks.add(windowKey{c.kc.idx, name}, gpuinfo.Window{From: from, To: to}, c.rn.gpu)
	c.rn.rec.res(c.kc.idx, name).Timing = t
}

func (c *caseRecorder) Failed(name string, err error) {
	c.rn.rec.res(c.kc.idx, name).Timing = nil
	for _, im := range c.rn.impls {
		if im.name == name {
			c.rn.failed(c.kc, im, "time", err)
		}
	}
}

func (c *caseRecorder) Round() { c.rn.rec.write() }

// throughput puts the throughput of every timing of case idx beside it.
func (rn *runner) throughput(idx int, dtype string) {
	c := &rn.rec.r.Cases[idx]
	caseModel := result.Model{Flops: c.Flops, Bytes: c.Bytes, Tokens: c.Tokens}
	for _, ir := range c.Results {
		if ir.Timing == nil {
			continue
		}
		m := caseModel
		if ir.Model != nil {
			m = *ir.Model
		}
		ir.Throughput = analyze.Throughput(m, *ir.Timing, rn.gpu, dtype)
	}
}

// settleLaunch gives every timing on the kernel clock the launch cost of
// the whole run (each was summarised with the estimate of its time), so
// that all of them add the same, and records it; ok is false when the run
// measured too few launch gaps to replace the first worker's.
func (rn *runner) settleLaunch(launch float64, ok bool) {
	if !ok {
		return
	}
	r := rn.rec.r
	r.Methodology.LaunchMS = launch
	for i := range r.Cases {
		changed := false
		for _, ir := range r.Cases[i].Results {
			changed = timing.ShiftLaunch(ir.Timing, launch) || changed
		}
		if changed {
			dtype, _ := r.Cases[i].Params["dtype"].(string)
			rn.throughput(i, dtype)
		}
	}
}

// clockMonitor reads the GPU's clocks while samples are timed (GPU runs
// where nvidia-smi can stream); windows are when each implementation was
// timed in each case.
type clockMonitor struct {
	mon     *gpuinfo.Monitor
	windows map[windowKey][]gpuinfo.Window
}

type windowKey struct {
	caseIdx int
	name    string
}

// start starts reading the clocks.
func (c *clockMonitor) start(ctx context.Context) error {
	mon, err := gpuinfo.StartMonitor(ctx)
	if err != nil {
		return err
	}
	c.mon = mon
	return nil
}

// abandon stops the readings of a run that stopped before finish.
func (c *clockMonitor) abandon() {
	if c.mon != nil {
		_ = c.mon.Stop()
	}
}

// add records that key was timed in w and returns what the clocks of gpu
// read in all of key's windows so far.
func (c *clockMonitor) add(key windowKey, w gpuinfo.Window, gpu *result.GPU) *result.Clocks {
	c.windows[key] = append(c.windows[key], w)
	return c.clocks(key, gpu)
}

// clocks summarises the monitor's readings of gpu while one
// implementation was timed on one case; nil without a monitor or a reading.
func (c *clockMonitor) clocks(key windowKey, gpu *result.GPU) *result.Clocks {
	if c.mon == nil || gpu == nil {
		return nil
	}
	return c.mon.Clocks(gpu.Index, c.windows[key])
}

// stop ends the clock readings and puts what they saw in r: per timing,
// and per GPU over every window.
func (c *clockMonitor) stop(r *result.Results, gpu *result.GPU, logf func(string, ...any)) {
	if c.mon == nil {
		return
	}
	if err := c.mon.Stop(); err != nil {
		logf("GPU clock monitor: %v", err)
	}
	all := []gpuinfo.Window{}
	for key, ws := range c.windows {
		all = append(all, ws...)
		if ir := r.Cases[key.caseIdx].Results[key.name]; ir != nil && ir.Timing != nil {
			ir.Timing.Clocks = c.clocks(key, gpu)
		}
	}
	for i := range r.Env.GPUs {
		r.Env.GPUs[i].During = c.mon.Clocks(r.Env.GPUs[i].Index, all)
	}
	c.mon = nil
}
