package timing

import (
	"fmt"
	"slices"
	"time"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/runner/harness"
)

// ClockRule is Methodology.ClockRule on GPU runs.
const ClockRule = "the kernel clock (the CUPTI span of each call plus launch_ms) where every sample of the " +
	"implementation on the case has one and the GPU was held back by the hold kernel; the CUDA events " +
	"otherwise, among them calls of kernel_clock_max_ms or more (timing.clock_note says why). Comparisons " +
	"and criteria use one clock for both sides: the events where the two sides' clocks differ"

// acc pools one implementation's samples on one case over the rounds.
type acc struct {
	samples  []float64 // on the CUDA events (or the host's clock)
	measured float64   // seconds of measured time
	wall     time.Duration
	sampled  float64 // seconds spent sampling (warm-ups excluded)
	warmup   float64 // seconds spent warming up
	rounds   int
	done     bool
	// kernel and busy are the CUPTI spans and kernel time of the same
	// samples (Samples.KernelMS, BusyMS), while every batch has them;
	// kernelNote says why a batch did not, kernels counts kernels a call.
	kernel, busy []float64
	kernelNote   string
	kernels      []int
	// discarded counts samples the worker threw away (Timing.Discarded).
	discarded int
	// cover and coverNote are the latest batch's (Timing.Cover).
	cover, coverNote string
	spinMS           float64
	// load is the host's load over the batches (Config.HostLoad).
	load HostLoadAcc
}

// add pools one batch: the event samples, their kernel-clock readings while
// every batch has them, and the time spent.
func (a *acc) add(sm *harness.Samples, took time.Duration) {
	a.samples = append(a.samples, sm.SamplesMS...)
	a.discarded += sm.Discarded
	a.warmup += sm.WarmupMS / 1e3
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
	t := analyze.Summarize(a.headline(launchMS))
	switch {
	case cpu:
		t.Clock = result.ClockPerfCounter
	case a.onKernel():
		t.Clock = result.ClockKernel
		ev := clockSummary(a.samples)
		t.Events = &ev
		k := result.KernelSummary{ClockSummary: clockSummary(a.kernel), BusyMedianMS: analyze.Summarize(a.busy).MedianMS,
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

// clockSummary is one clock's reading of samples.
func clockSummary(samples []float64) result.ClockSummary {
	t := analyze.Summarize(samples)
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

// coverSummary tells, for the log, how the GPU was held back before each
// sample when that was not the hold kernel, and what was discarded.
func (a *acc) coverSummary() string {
	var s string
	switch a.cover {
	case "", "hold":
	case "spin":
		s = fmt.Sprintf("; timed behind a %.3g ms spin kernel", a.spinMS)
	default:
		s = "; timed with nothing holding the GPU back until the call was enqueued"
	}
	if a.coverNote != "" {
		s += ": " + a.coverNote
	}
	if a.discarded > 0 {
		s += fmt.Sprintf("; %d samples discarded (the GPU reached the start event before the call was enqueued, or the hold kernel timed out)", a.discarded)
	}
	return s
}

// wallSummary says where the implementation's wall time on the case went:
// sampling (what the stopping rule asks for), warm-ups, and the rest (the
// kernel clock's set-up and reading, the rests' bookkeeping, the pipe).
func (a *acc) wallSummary() string {
	rest := max(a.wall.Seconds()-a.sampled-a.warmup, 0)
	return fmt.Sprintf("; %.2f s of wall time: %.2f s sampling, %.2f s warm-up, %.2f s the rest", a.wall.Seconds(), a.sampled, a.warmup, rest)
}
