// Package analyze turns measured results into conclusions: throughput from
// the work models and the GPUs' peaks (peaks.json), comparisons with
// verdicts on the medians' intervals, the spec's success criteria, the
// throttle rules of a GPU's clock readings, and warnings about figures that
// deserve less trust; and the timing samples' summaries and stopping rule
// (Summarize, StoppingRule). The client and the runner share it.
package analyze

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/xrun-dev/xrun/internal/table"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

// DefaultThreshold is the margin a comparison must clear: 1.02, 2%.
const DefaultThreshold = 1.02

// ExcessiveSpeedup is the speedup over the baseline above which a result is
// flagged: more than 10x usually means the candidate skips work.
const ExcessiveSpeedup = 10

// Warning kinds.
const (
	WarnNotConverged = "not_converged"
	// WarnThrottled: a timing taken during a thermal or hardware slowdown
	// (or at clocks well under the maximum with no reason given), or, with
	// no implementation, the GPU's state over the run.
	WarnThrottled = "throttled"
	// WarnPowerCapped: a timing taken at the GPU's power cap, a heavy
	// kernel's steady state: told, not noise.
	WarnPowerCapped      = "power_capped"
	WarnExcessiveSpeedup = "excessive_speedup"
	// WarnAutotuneBeaten: a config read from the autotune cache that the
	// check of the choice found beaten (it still ran: reuse is the default).
	WarnAutotuneBeaten = "autotune_beaten"
	// WarnStrayProcesses: processes of the experiment's code outlived
	// their workers (setsid children, daemons) and were killed before the
	// results were final.
	WarnStrayProcesses = "stray_processes"
)

// Throughput derives TFLOPS, GB/s and tokens/s from work model m and the
// median of t, and, when gpu is known to the peaks table, the percentage of
// the GPU's dense peak for dtype and of its memory bandwidth. With both a
// FLOP and a byte model it adds the arithmetic intensity, and with the
// GPU's roofline for dtype (RoofFor) which side of the ridge point the call
// is on. gpu is nil on a CPU run (no percentages, no bound). It returns nil
// when there is no model or no timing.
func Throughput(m result.Model, t result.Timing, gpu *result.GPU, dtype string) *result.Throughput {
	if t.MedianMS <= 0 || (m.Flops <= 0 && m.Bytes <= 0 && m.Tokens <= 0) {
		return nil
	}
	sec := t.MedianMS / 1e3
	tp := &result.Throughput{}
	if m.Flops > 0 {
		tp.TFLOPS = m.Flops / sec / 1e12
	}
	if m.Bytes > 0 {
		tp.GBps = m.Bytes / sec / 1e9
	}
	if m.Tokens > 0 {
		tp.TokensPerS = m.Tokens / sec
	}
	if m.Flops > 0 && m.Bytes > 0 {
		tp.ArithmeticIntensity = m.Flops / m.Bytes
	}
	if gpu == nil {
		return tp
	}
	if tp.TFLOPS > 0 {
		if peak, _, ok := Peak(gpu.Name, dtype); ok {
			tp.PctPeakFlops = 100 * tp.TFLOPS / peak
		}
	}
	if tp.GBps > 0 {
		if bw, ok := bandwidth(gpu); ok {
			tp.PctPeakBW = 100 * tp.GBps / bw
		}
	}
	if roof, ok := RoofFor(gpu, dtype); ok && tp.ArithmeticIntensity > 0 {
		tp.Bound = roof.Bound(tp.ArithmeticIntensity)
	}
	return tp
}

// Roof is a GPU's roofline for one dtype: the dense peak of its arithmetic
// and the bandwidth of its memory.
type Roof struct {
	GPU        string  `json:"gpu"`
	Dtype      string  `json:"dtype"`
	PeakTFLOPS float64 `json:"peak_tflops"`
	PeakGBps   float64 `json:"peak_gbps"`
}

// Ridge is the arithmetic intensity, in FLOP per byte, where the memory
// roof meets the compute roof: a call below it cannot reach the compute
// peak even at full bandwidth.
func (r Roof) Ridge() float64 { return r.PeakTFLOPS * 1e12 / (r.PeakGBps * 1e9) }

// Attainable is the most TFLOP/s a call of arithmetic intensity ai can
// reach under the roofs: min(peak, ai x bandwidth).
func (r Roof) Attainable(ai float64) float64 { return math.Min(r.PeakTFLOPS, ai*r.PeakGBps/1e3) }

// Bound says which roof limits a call of arithmetic intensity ai:
// result.BoundCompute at or above the ridge point, else result.BoundMemory.
func (r Roof) Bound(ai float64) string {
	if ai >= r.Ridge() {
		return result.BoundCompute
	}
	return result.BoundMemory
}

// RoofFor returns gpu's roofline for dtype, from the peaks table (the
// recorded peak_gbps for a GPU the table knows without a bandwidth). ok is
// false for a GPU or dtype the table does not know, or a dtype the GPU
// has no hardware for.
func RoofFor(gpu *result.GPU, dtype string) (Roof, bool) {
	if gpu == nil {
		return Roof{}, false
	}
	peak, _, ok := Peak(gpu.Name, dtype)
	if !ok {
		return Roof{}, false
	}
	bw, ok := bandwidth(gpu)
	if !ok {
		return Roof{}, false
	}
	d, _ := CanonicalDtype(dtype)
	return Roof{GPU: gpu.Name, Dtype: d, PeakTFLOPS: peak, PeakGBps: bw}, true
}

// bandwidth is gpu's memory bandwidth in GB/s: the peaks table's, else
// the one recorded with the GPU.
func bandwidth(gpu *result.GPU) (float64, bool) {
	if bw, ok := PeakBandwidth(gpu.Name); ok {
		return bw, true
	}
	return gpu.PeakGBps, gpu.PeakGBps > 0
}

// Verdict compares a candidate's timing with a baseline's: speedup =
// base.median / cand.median, with a verdict judged on the uncertainty of
// the two medians, so that noise cannot produce a FAST and a difference
// that repeats run after run reads the same in every run. With threshold
// th (default 1.02, a 2% margin; values below 1 mean the default) and
// [lo, hi] the 95% interval of the speedup (SpeedupInterval):
//
//	FAST       lo >= th: the candidate is faster by more than the margin,
//	           even at the slow end of what its samples allow;
//	SLOW       hi <= 1/th: the same, the other way round;
//	SAME       1/th <= lo and hi <= th: whatever the truth within the
//	           interval, the difference is under the margin;
//	AMBIGUOUS  the interval reaches across a margin's edge: the medians
//	           are too uncertain for the size of the difference, or a
//	           timing is missing (speedup 0).
//
// The interquartile ranges do not decide: under a power cap they widen
// and narrow from run to run while the medians repeat within 1%
// (docs/performance.md, "Verdicts on the medians' intervals").
func Verdict(cand, base result.Timing, threshold float64) (speedup float64, verdict string) {
	if threshold < 1 {
		threshold = DefaultThreshold
	}
	lo, hi, ok := SpeedupInterval(cand, base)
	if !ok {
		return 0, result.VerdictAmbiguous // nothing to compare
	}
	speedup = base.MedianMS / cand.MedianMS
	switch {
	case lo >= threshold:
		return speedup, result.VerdictFast
	case hi*threshold <= 1:
		return speedup, result.VerdictSlow
	case lo*threshold >= 1 && hi <= threshold:
		return speedup, result.VerdictSame
	}
	return speedup, result.VerdictAmbiguous
}

// SpeedupInterval is the 95% interval of base.median / cand.median: the
// ratio times and over exp(h), where h is the two medians' relative
// half-widths (MedianHalfWidth) added in quadrature. ok is false when
// either timing has no median.
func SpeedupInterval(cand, base result.Timing) (lo, hi float64, ok bool) {
	if cand.MedianMS <= 0 || base.MedianMS <= 0 {
		return 0, 0, false
	}
	s := base.MedianMS / cand.MedianMS
	h := math.Hypot(MedianHalfWidth(cand), MedianHalfWidth(base))
	return s * math.Exp(-h), s * math.Exp(h), true
}

// medianZ is the normal quantile of the medians' 95% intervals.
const medianZ = 1.959963984540054

// notch is the factor of McGill, Tukey and Larsen's boxplot notch (1978):
// median +- 1.58 IQR / sqrt(n) is roughly its 95% interval.
const notch = 1.58

// MedianHalfWidth is the relative half-width of the 95% interval of t's
// median: z x stderr_rel, the distribution-free standard error of the
// median from the order statistics around it (stats.go), or, for a
// timing that does not carry it (files before it, a single sample), the
// boxplot notch's 1.58 IQR / sqrt(n) over the median; 0 when neither can
// be had.
func MedianHalfWidth(t result.Timing) float64 {
	switch {
	case t.MedianMS <= 0:
		return 0
	case t.StderrRel > 0:
		return medianZ * t.StderrRel
	case t.Samples > 1 && t.Q3MS > t.Q1MS:
		return notch * (t.Q3MS - t.Q1MS) / math.Sqrt(float64(t.Samples)) / t.MedianMS
	}
	return 0
}

// Comparisons compares every implementation other than the baseline with the
// baseline, per case, where both have timings; cases in order, and within a
// case implementations in r.Implementations order.
func Comparisons(r *result.Results, threshold float64) []result.Comparison {
	out := []result.Comparison{}
	for _, c := range r.Cases {
		base := timing(c.Results[r.Baseline])
		if base == nil {
			continue
		}
		for _, name := range r.Implementations {
			if name == r.Baseline {
				continue
			}
			cand := timing(c.Results[name])
			if cand == nil || c.Results[name].Status == result.ImplWrong {
				// An incorrect implementation gets no speed verdict.
				continue
			}
			ct, bt := OneClock(*cand, *base)
			s, v := Verdict(ct, bt, threshold)
			lo, hi, _ := SpeedupInterval(ct, bt)
			out = append(out, result.Comparison{
				A: name, B: r.Baseline, Params: c.Params, Label: CaseLabel(c), Speedup: s, SpeedupLo: lo, SpeedupHi: hi, Verdict: v,
			})
		}
	}
	return out
}

// OneClock returns a and b on the same clock, so that a speedup never
// divides one clock's reading by another's: as they are when their clocks
// agree, else each on its CUDA events (a kernel-clock timing carries the
// events' reading of the same samples). A timing without the events'
// reading is kept as it is.
func OneClock(a, b result.Timing) (result.Timing, result.Timing) {
	if a.Clock == b.Clock {
		return a, b
	}
	return onEvents(a), onEvents(b)
}

func onEvents(t result.Timing) result.Timing {
	if t.Clock != result.ClockKernel || t.Events == nil {
		return t
	}
	e := t.Events
	return result.Timing{MedianMS: e.MedianMS, MinMS: e.MinMS, Q1MS: e.Q1MS, Q3MS: e.Q3MS, StderrRel: e.StderrRel,
		Samples: e.Samples, Clock: result.ClockEvents}
}

// timing returns an implementation's timing when it has one worth using.
func timing(ir *result.ImplResult) *result.Timing {
	if ir == nil || ir.Timing == nil || ir.Timing.Samples == 0 || ir.Timing.MedianMS <= 0 {
		return nil
	}
	return ir.Timing
}

// CaseLabel is the case's label, or its parameters as "k=v" sorted by key
// when it has none.
func CaseLabel(c result.Case) string {
	if c.Label != "" {
		return c.Label
	}
	keys := make([]string, 0, len(c.Params))
	for k := range c.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + spec.FormatValue(c.Params[k])
	}
	return strings.Join(parts, " ")
}

// Warnings lists what makes the figures in r less trustworthy: timings that
// did not converge (per implementation and case), GPUs whose clocks were
// held back while an implementation was timed (from the readings taken
// during its samples) or over the run (from env before/after), CPU timings
// taken on a busy host (HostBusy), and speedups over the baseline above
// ExcessiveSpeedup (from r.Comparisons, so call it after filling those).
// Failed implementations are not warnings: their status says so.
func Warnings(r *result.Results) []result.Warning {
	out := []result.Warning{}
	names := append([]string{result.Reference}, r.Implementations...)
	for _, c := range r.Cases {
		label := CaseLabel(c)
		for _, name := range uniq(names) {
			t := timing(c.Results[name])
			if t == nil || t.Converged {
				continue
			}
			target := r.Methodology.TargetRSE
			if target > 0 && t.StderrRel > 0 && t.StderrRel <= target {
				// Within the target: a cap stopped the loop before the rule
				// could decide, but the figure is as tight as asked.
				continue
			}
			msg := fmt.Sprintf("%s at %s did not converge: relative standard error %s after %d samples", name, label, Percent(t.StderrRel), t.Samples)
			if t.TotalS > 0 {
				msg += fmt.Sprintf(" and %.3g s", t.TotalS)
			}
			if why := stopWords(t.StopReason, r.Methodology); why != "" {
				msg += " (" + why + ")"
			}
			if target > 0 {
				msg += fmt.Sprintf(", target %.2g%%", 100*target)
			}
			out = append(out, result.Warning{Kind: WarnNotConverged, Implementation: name, Label: label, Message: msg})
		}
	}
	maxSM := 0
	for _, g := range r.Env.GPUs {
		if g.Before != nil {
			maxSM = max(maxSM, g.Before.MaxSMClockMHz)
		}
	}
	for _, c := range r.Cases {
		label := CaseLabel(c)
		for _, name := range uniq(names) {
			t := timing(c.Results[name])
			if t == nil {
				continue
			}
			if th, why := ThrottledDuring(t.Clocks, maxSM); th {
				out = append(out, result.Warning{Kind: WarnThrottled, Implementation: name, Label: label,
					Message: fmt.Sprintf("%s at %s was timed with the GPU's clocks held back: %s; its time reflects the limited clock and can move between runs", name, label, why)})
			} else if capped, why := PowerCapped(t.Clocks, maxSM); capped {
				out = append(out, result.Warning{Kind: WarnPowerCapped, Implementation: name, Label: label,
					Message: fmt.Sprintf("%s at %s ran at the GPU's power cap: %s; a heavy kernel's steady state, which the history judges against its series' usual clocks", name, label, why)})
			}
		}
	}
	out = append(out, hostBusyWarnings(r, uniq(names))...)
	for _, g := range r.Env.GPUs {
		if th, why := Throttled(g.Before, g.After); th {
			out = append(out, result.Warning{Kind: WarnThrottled,
				Message: fmt.Sprintf("GPU %d (%s) was throttled by the end of the run: %s; each timing's own clock readings say whether it was", g.Index, g.Name, why)})
		}
	}
	for _, c := range r.Cases {
		label := CaseLabel(c)
		for _, name := range uniq(names) {
			ir := c.Results[name]
			if ir == nil {
				continue
			}
			for _, a := range ir.Autotune {
				if a.Check != nil && a.Check.Beaten != "" {
					out = append(out, result.Warning{Kind: WarnAutotuneBeaten, Implementation: name, Label: label,
						Message: fmt.Sprintf("%s at %s: %s; run xrun submit --retune to tune afresh", name, label, a.Check.Note)})
				}
			}
		}
	}
	for _, cmp := range r.Comparisons {
		if cmp.Speedup > ExcessiveSpeedup {
			out = append(out, result.Warning{Kind: WarnExcessiveSpeedup, Implementation: cmp.A, Label: cmp.Label,
				Message: fmt.Sprintf("%s is %s faster than %s at %s; check that it does all the work (correctness, inputs, caching)",
					cmp.A, table.Speedup(cmp.Speedup), cmp.B, cmp.Label)})
		}
	}
	return out
}

func uniq(names []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// Percent writes a fraction as a percentage with two decimals, or with two
// significant digits where two decimals would read 0.00%.
func Percent(f float64) string {
	p := 100 * f
	if p != 0 && math.Abs(p) < 0.005 {
		return fmt.Sprintf("%.2g%%", p)
	}
	return fmt.Sprintf("%.2f%%", p)
}

// stopWords says why a timing loop stopped, in words, keeping the stop
// reason's name so it can be looked up in results.json.
func stopWords(reason string, m result.Methodology) string {
	switch reason {
	case "max_time":
		if m.MaxTimeS > 0 {
			return fmt.Sprintf("max_time: reached the %g s time cap", m.MaxTimeS)
		}
	case "max_samples":
		if m.MaxSamples > 0 {
			return fmt.Sprintf("max_samples: reached the %d-sample cap", m.MaxSamples)
		}
	case "max_wall_time":
		return "max_wall_time: reached the wall-time cap"
	}
	return reason
}
