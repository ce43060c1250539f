package run

import (
	"fmt"
	"slices"
	"time"

	"github.com/xrun-dev/xrun/runner/harness"
	"github.com/xrun-dev/xrun/runner/result"
	"github.com/xrun-dev/xrun/runner/stats"
)

// clockRule is Methodology.ClockRule on GPU runs.
const clockRule = "the kernel clock (the CUPTI span of each call plus launch_ms) where every sample of the " +
	"implementation on the case has one and the GPU was held back by the hold kernel; the CUDA events " +
	"otherwise, among them calls of kernel_clock_max_ms or more (timing.clock_note says why). Comparisons " +
	"and criteria use one clock for both sides: the events where the two sides' clocks differ"

// add pools one batch: the event samples, their kernel-clock readings while
// every batch has them, and the time spent.
func (a *acc) add(sm *harness.Samples, took time.Duration) {
	a.samples = append(a.samples, sm.SamplesMS...)
	a.discarded += sm.Discarded
	a.cover, a.coverNote, a.spinMS = sm.Cover, sm.CoverNote, sm.SpinMS
	for _, v := range sm.SamplesMS {
		a.measured += v / 1e3
	}
	switch {
	case sm.SamplingMS > 0:
		a.sampled += sm.SamplingMS / 1e3
	default: // a worker that does not say: the batch less its warm-up
		a.sampled += max(took.Seconds()-sm.WarmupMS/1e3, 0)
	}
	switch {
	case a.kernelNote != "":
		// a batch without the kernel clock: the events decide from then on
	case len(sm.KernelMS) == len(sm.SamplesMS) && len(sm.KernelMS) > 0:
		a.kernel = append(a.kernel, sm.KernelMS...)
		a.busy = append(a.busy, sm.BusyMS...)
		a.kernels = append(a.kernels, sm.Kernels)
	case len(sm.SamplesMS) == 0:
	default:
		a.kernelNote = sm.KernelNote
		if a.kernelNote == "" {
			a.kernelNote = "the worker gave no kernel clock"
		}
		a.kernel, a.busy, a.kernels = nil, nil, nil
	}
}

// onKernel says whether a's headline is on the kernel clock: every sample
// has a CUPTI reading, and the GPU was held back until the whole call was
// enqueued (with nothing holding it back, the host's time to enqueue the
// call is part of what it costs, and only the events see it).
func (a *acc) onKernel() bool {
	return a.kernelNote == "" && len(a.kernel) > 0 && len(a.kernel) == len(a.samples) && a.cover == "hold"
}

// headline returns the samples the figures and the stopping rule use: the
// kernel clock's (CUPTI spans plus launchMS) or the events'.
func (a *acc) headline(launchMS float64) []float64 {
	if !a.onKernel() {
		return a.samples
	}
	out := make([]float64, len(a.kernel))
	for i, v := range a.kernel {
		out[i] = v + launchMS
	}
	return out
}

// timing summarises a's samples on the headline clock, with the events'
// and CUPTI's own readings beside it when the headline is the kernel clock.
func (a *acc) timing(cpu bool, launchMS float64) result.Timing {
	t := stats.Summarize(a.headline(launchMS))
	switch {
	case cpu:
		t.Clock = result.ClockPerfCounter
	case a.onKernel():
		t.Clock = result.ClockKernel
		ev := clockSummary(a.samples)
		t.Events = &ev
		k := result.KernelSummary{ClockSummary: clockSummary(a.kernel), BusyMedianMS: stats.Summarize(a.busy).MedianMS,
			Kernels: medianInt(a.kernels), LaunchMS: launchMS}
		t.Kernel = &k
	default:
		t.Clock = result.ClockEvents
		switch {
		case a.kernelNote != "":
			t.ClockNote = a.kernelNote
		case a.cover != "hold" && a.cover != "":
			t.ClockNote = fmt.Sprintf("the GPU was not held back by the hold kernel (cover %s)", a.cover)
		case len(a.kernel) == 0:
			t.ClockNote = "no kernel clock"
		}
	}
	return t
}

// minGaps is how many launch gaps the run needs before their mean replaces
// the first worker's own measure.
const minGaps = 16

// launch is the launch cost the kernel clock adds: the interquartile mean
// of every gap the batches measured so far, else the first worker's.
func (rn *runner) launch() float64 {
	if len(rn.gaps) < minGaps {
		return rn.r.Methodology.LaunchMS
	}
	return iqMean(rn.gaps)
}

// settleLaunch gives every timing on the kernel clock the launch cost of
// the whole run (each was summarised with the estimate of its time), so
// that all of them add the same, and records it.
func (rn *runner) settleLaunch() {
	if len(rn.gaps) < minGaps {
		return
	}
	launch := rn.launch()
	rn.r.Methodology.LaunchMS = launch
	for i := range rn.r.Cases {
		changed := false
		for _, ir := range rn.r.Cases[i].Results {
			changed = shiftLaunch(ir.Timing, launch) || changed
		}
		if changed {
			dtype, _ := rn.r.Cases[i].Params["dtype"].(string)
			rn.throughputAt(i, dtype)
		}
	}
}

// shiftLaunch moves a kernel-clock timing's figures to a launch cost of
// launch ms; it reports whether anything moved.
func shiftLaunch(t *result.Timing, launch float64) bool {
	if t == nil || t.Clock != result.ClockKernel || t.Kernel == nil || t.Kernel.LaunchMS == launch {
		return false
	}
	d := launch - t.Kernel.LaunchMS
	se := t.StderrRel * t.MedianMS
	for _, p := range []*float64{&t.MedianMS, &t.MeanMS, &t.MinMS, &t.MaxMS, &t.Q1MS, &t.Q3MS, &t.P20MS, &t.P80MS} {
		*p += d
	}
	if t.MedianMS > 0 {
		t.StderrRel = se / t.MedianMS
	}
	t.Kernel.LaunchMS = launch
	return true
}

// iqMean is the mean of the middle half of xs: the gaps cluster around
// several values, and a median jumps from one cluster to the next.
func iqMean(xs []float64) float64 {
	x := slices.Clone(xs)
	slices.Sort(x)
	q := len(x) / 4
	mid := x[q : len(x)-q]
	if len(mid) == 0 {
		mid = x
	}
	sum := 0.0
	for _, v := range mid {
		sum += v
	}
	return sum / float64(len(mid))
}

// clockSummary is one clock's reading of samples.
func clockSummary(samples []float64) result.ClockSummary {
	t := stats.Summarize(samples)
	return result.ClockSummary{MedianMS: t.MedianMS, MinMS: t.MinMS, Q1MS: t.Q1MS, Q3MS: t.Q3MS, StderrRel: t.StderrRel, Samples: t.Samples}
}

func medianInt(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	x := slices.Clone(xs)
	slices.Sort(x)
	return x[len(x)/2]
}

// clockSummary tells, for the log, which clock a finished timing is on.
func (a *acc) clockSummary(t result.Timing) string {
	switch t.Clock {
	case result.ClockKernel:
		return fmt.Sprintf("; kernel clock (events read %.4g ms)", t.Events.MedianMS)
	case result.ClockEvents:
		// Without the hold, coverSummary says why.
		if t.ClockNote != "" && a.cover == "hold" {
			return "; on the CUDA events: " + t.ClockNote
		}
	}
	return ""
}
