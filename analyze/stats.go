// Summarize summarizes timing samples and decides when to stop taking
// them.
//
// The median is the primary statistic: GPU and CPU timings are skewed, with a
// long right tail (preemption, a clock change, a page fault), and one slow
// sample moves the mean but not the median. The precision figure that goes
// with it, stderr_rel, is therefore the standard error of the median divided
// by the median, not the standard error of the mean. It is estimated without
// assuming a distribution, from the order statistics around the median
// (McKean and Schrader, 1984):
//
//	c  = round((n+1)/2 - z*sqrt(n/4)),  z = 1.96
//	SE = (x(n-c+1) - x(c)) / (2z)
//
// which is the half-width of the distribution-free 95% confidence interval of
// the median divided by z. The asymptotic formula 1.2533*sd/sqrt(n) holds only
// for normal samples: on real timings the sd is dominated by the tail, so it
// overstates the median's uncertainty by the very outliers the median
// ignores, and a run with a few hiccups would never converge. The
// order-statistic estimate looks only at the samples near the median, which
// are the ones that decide it.

package analyze

import (
	"fmt"
	"math"
	"slices"

	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

// z is the normal quantile of the median's confidence interval (95%).
const z = 1.959963984540054

// Summarize fills every result.Timing field it can from samples (ms): median,
// mean, min, max, q1, q3, p20, p80 (linear interpolation between order
// statistics, numpy's default), stdev (sample, n-1), stderr_rel (standard
// error of the median / median, see the package comment), samples, and the
// kept samples (Keep, in the order given). It
// leaves Converged, StopReason, Rounds and TotalS alone. With no samples it
// returns a zero Timing; with one, stdev and stderr_rel are 0.
func Summarize(samples []float64) result.Timing {
	n := len(samples)
	if n == 0 {
		return result.Timing{}
	}
	x := sorted(samples)
	sum := 0.0
	for _, v := range x {
		sum += v
	}
	mean := sum / float64(n)
	t := result.Timing{
		MedianMS:  Quantile(x, 0.5),
		MeanMS:    mean,
		MinMS:     x[0],
		MaxMS:     x[n-1],
		Q1MS:      Quantile(x, 0.25),
		Q3MS:      Quantile(x, 0.75),
		P20MS:     Quantile(x, 0.20),
		P80MS:     Quantile(x, 0.80),
		StdevMS:   stdev(x, mean),
		StderrRel: relMedianSE(x),
		Samples:   n,
		// Kept in the order taken, not sorted: a systematic sample of the
		// run, which a rank test against another run can use.
		KeptSamplesMS: Keep(samples, result.KeptSamples),
	}
	return t
}

// Keep returns at most k of samples, evenly spaced over their order (the
// first and the last among them), or a copy of all of them when there are
// no more than k.
func Keep(samples []float64, k int) []float64 {
	n := len(samples)
	if n <= k {
		return slices.Clone(samples)
	}
	if k <= 0 {
		return nil
	}
	if k == 1 {
		return []float64{samples[0]}
	}
	out := make([]float64, k)
	for i := range out {
		out[i] = samples[i*(n-1)/(k-1)]
	}
	return out
}

// Quantile returns the p-quantile (0 <= p <= 1) of sorted samples with linear
// interpolation between the closest ranks (numpy.quantile's default,
// method="linear"). It returns NaN for no samples.
func Quantile(sortedSamples []float64, p float64) float64 {
	n := len(sortedSamples)
	if n == 0 {
		return math.NaN()
	}
	p = math.Min(math.Max(p, 0), 1)
	h := float64(n-1) * p
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sortedSamples[n-1]
	}
	frac := h - float64(lo)
	return sortedSamples[lo] + frac*(sortedSamples[lo+1]-sortedSamples[lo])
}

// MedianSE returns the standard error of the median of sorted samples,
// estimated from the order statistics around it (see the package comment).
// It returns NaN for fewer than two samples.
func MedianSE(sortedSamples []float64) float64 {
	n := len(sortedSamples)
	if n < 2 {
		return math.NaN()
	}
	c := int(math.Round(float64(n+1)/2 - z*math.Sqrt(float64(n)/4)))
	c = max(c, 1) // 1-based rank; small n use the extremes
	return (sortedSamples[n-c] - sortedSamples[c-1]) / (2 * z)
}

// relMedianSE is MedianSE/median, or 0 where that is undefined (fewer than
// two samples, a median of zero), so that the figure is always valid JSON.
func relMedianSE(x []float64) float64 {
	se := MedianSE(x)
	med := Quantile(x, 0.5)
	if math.IsNaN(se) || med <= 0 {
		return 0
	}
	return se / med
}

// medianAndSE returns what MedianSE and Quantile(.., 0.5) would on the sorted
// samples, in linear time: a copy and selection of the order statistics
// needed (the c-th from each end and the middle one or two).
func medianAndSE(samples []float64) (se, median float64) {
	n := len(samples)
	x := append([]float64(nil), samples...)
	c := max(int(math.Round(float64(n+1)/2-z*math.Sqrt(float64(n)/4))), 1)
	lo := selectKth(x, c-1)
	median = selectKth(x, (n-1)/2)
	if n%2 == 0 {
		median += 0.5 * (selectKth(x, n/2) - median) // as Quantile interpolates
	}
	hi := selectKth(x, n-c)
	return (hi - lo) / (2 * z), median
}

func stdev(x []float64, mean float64) float64 {
	if len(x) < 2 {
		return 0
	}
	ss := 0.0
	for _, v := range x {
		d := v - mean
		ss += d * d
	}
	return math.Sqrt(ss / float64(len(x)-1))
}

func sorted(samples []float64) []float64 {
	x := slices.Clone(samples)
	slices.Sort(x)
	return x
}

// StoppingRule is the stopping rule: take at least MinSamples samples over at least
// MinTimeS seconds of sampling, then stop as soon as the relative standard
// error of the median is <= TargetRSE; give up (converged=false) at
// MaxSamples samples or MaxTimeS seconds of measured time, whichever comes
// first.
//
// MinTimeS counts the wall time spent taking the samples (flushes, holds and
// rests included, warm-ups not), not the samples' own sum: its purpose is to
// spread the samples over time, past the clock and temperature drifts of a
// fraction of a second. Counted as measured time it asked a 6.7 us kernel
// for 75,000 samples and 11 s of wall time when a few thousand settle its
// median as well (docs/performance.md).
type StoppingRule struct {
	MinSamples, MaxSamples int
	MinTimeS, MaxTimeS     float64
	TargetRSE              float64
}

// Stop reasons reported by Rule.Check.
const (
	ReasonConverged  = "converged"
	ReasonMaxTime    = "max_time"
	ReasonMaxSamples = "max_samples"
)

// DefaultStoppingRule is the rule used unless the spec says otherwise: at least 10
// samples and 0.3 s of sampling, a 0.5% target, and caps of 100000 samples and 15 s per
// implementation per case (a slow kernel still gets a decision in bounded
// time, a fast one is not stopped by the sample cap before the time cap).
// 0.3 s is three rounds of the timing loop's shortest batch (0.1 s): on
// the softmax timing-validation experiment, 0.5 s gave the same medians
// (within 1%) and no smaller run-to-run spread, on an H100 and an H200
// (docs/performance.md, "The minimum sampling time").
func DefaultStoppingRule() StoppingRule {
	return StoppingRule{MinSamples: 10, MaxSamples: 100000, MinTimeS: 0.3, MaxTimeS: 15, TargetRSE: 0.005}
}

// StoppingRuleFrom returns DefaultRule with every non-zero value of m applied. A cap
// set below its minimum by the spec is raised to the minimum, so the rule
// stays satisfiable.
func StoppingRuleFrom(m spec.Method) StoppingRule {
	r := DefaultStoppingRule()
	if m.MinSamples > 0 {
		r.MinSamples = m.MinSamples
	}
	if m.MaxSamples > 0 {
		r.MaxSamples = m.MaxSamples
	}
	if m.MinTimeS > 0 {
		r.MinTimeS = m.MinTimeS
	}
	if m.MaxTimeS > 0 {
		r.MaxTimeS = m.MaxTimeS
	}
	if m.TargetRSE > 0 {
		r.TargetRSE = m.TargetRSE
	}
	r.MaxSamples = max(r.MaxSamples, r.MinSamples)
	r.MaxTimeS = math.Max(r.MaxTimeS, r.MinTimeS)
	return r
}

// Check says whether to stop after samples (ms) whose own sum is measuredS
// seconds, taken over sampledS seconds of wall time. reason is "converged", "max_time", "max_samples" or "" (go
// on). Convergence wins over a cap reached at the same time. At least two
// samples and a positive median are needed to converge. Once the minimums
// are met one call costs time linear in the number of samples (a copy and a
// selection, no sort: about 3 ms for 100000 samples), so callers check once
// per batch of samples rather than after each one.
func (r StoppingRule) Check(samples []float64, measuredS, sampledS float64) (stop, converged bool, reason string) {
	n := len(samples)
	atTimeCap := r.MaxTimeS > 0 && measuredS >= r.MaxTimeS
	atSampleCap := r.MaxSamples > 0 && n >= r.MaxSamples
	// A cap reached before the minimum sampling time (a fast kernel fills
	// the sample cap in less wall time than min_time_s) still converged when
	// the error is within the target: the minimum guards against deciding on
	// a short burst, and going on is not possible.
	if n >= max(r.MinSamples, 2) && (sampledS >= r.MinTimeS || atTimeCap || atSampleCap) {
		se, med := medianAndSE(samples)
		if med > 0 && se/med <= r.TargetRSE {
			return true, true, ReasonConverged
		}
	}
	switch {
	case atTimeCap:
		return true, false, ReasonMaxTime
	case atSampleCap:
		return true, false, ReasonMaxSamples
	}
	return false, false, ""
}

// String is the rule in words, for results.methodology.stopping_rule.
func (r StoppingRule) String() string {
	return fmt.Sprintf("at least %d samples over %s s of sampling (wall time, warm-ups excluded); then stop when the standard error of the median "+
		"(distribution-free, from order statistics) is <= %s%% of the median; give up (converged=false) at %s s of measured time or %d samples",
		r.MinSamples, fmtNum(r.MinTimeS), fmtNum(r.TargetRSE*100), fmtNum(r.MaxTimeS), r.MaxSamples)
}

func fmtNum(v float64) string { return fmt.Sprintf("%g", v) }
