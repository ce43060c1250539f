package timing

import (
	"slices"

	"github.com/xrun-dev/xrun/result"
)

// minGaps is how many launch gaps the run needs before their mean replaces
// the first worker's own measure.
const minGaps = 16

// launch is the launch cost the kernel clock adds: the interquartile mean
// of every gap the batches measured so far, else the first worker's.
func (l *Loop) launch() float64 {
	if len(l.gaps) < minGaps {
		return l.c.FirstLaunchMS()
	}
	return iqMean(l.gaps)
}

// Launch is the launch cost of the whole run, from every gap the batches
// measured; ok is false while they measured fewer than minGaps (each
// timing then keeps the estimate it was summarised with).
func (l *Loop) Launch() (ms float64, ok bool) {
	if len(l.gaps) < minGaps {
		return 0, false
	}
	return iqMean(l.gaps), true
}

// ShiftLaunch moves a kernel-clock timing's figures to a launch cost of
// launch ms; it reports whether anything moved.
func ShiftLaunch(t *result.Timing, launch float64) bool {
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
