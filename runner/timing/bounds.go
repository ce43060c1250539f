package timing

import (
	"fmt"
	"math"

	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/runner/harness"
)

// The bounds of a sample a worker reports, in ms. An implementation's code
// runs in the worker that times it, so it can report timings of its own
// (architecture.md, "Container"): a sample outside these bounds is no
// timing of a call, and the implementation's timing on the case is
// refused (its status is error) instead of feeding a median of 1e300 ms or
// 1e-300 ms into throughputs and speedups that are then infinite.
//
// MinSampleMS is 1 ns: no call, of a GPU kernel or of a Python function,
// returns faster, and both clocks resolve it (perf_counter_ns, CUDA events
// at about 0.5 µs). MaxSampleMS is 1e9 ms, 11.6 days: more than any
// implementation timeout. Within them every figure derived from the
// samples (squares for the spread, the work models over the median) stays
// far from float64's range.
// They are results.json's bounds of a timing, which Decode checks.
const (
	MinSampleMS = result.MinTimingMS
	MaxSampleMS = result.MaxTimingMS
)

// checkSamples refuses a batch whose samples are not durations within the
// bounds: the samples themselves (MinSampleMS to MaxSampleMS) and the
// kernel clock's spans, busy times, launch gaps, warm-up and sampling
// time (0 to MaxSampleMS). The error is one sentence for the
// implementation's row.
func checkSamples(sm *harness.Samples) error {
	for _, v := range sm.SamplesMS {
		if !(v >= MinSampleMS && v <= MaxSampleMS) {
			return fmt.Errorf("the worker reported a sample of %g ms, outside the %g to %g ms a call can take: its timing is refused", v, MinSampleMS, MaxSampleMS)
		}
	}
	for _, f := range []struct {
		what string
		xs   []float64
	}{{"kernel_ms", sm.KernelMS}, {"busy_ms", sm.BusyMS}, {"launch_gaps_ms", sm.LaunchGapsMS},
		{"warmup_ms", []float64{sm.WarmupMS}}, {"sampling_ms", []float64{sm.SamplingMS}}, {"spin_ms", []float64{sm.SpinMS}}} {
		for _, v := range f.xs {
			if !(v >= 0 && v <= MaxSampleMS) || math.IsNaN(v) {
				return fmt.Errorf("the worker reported %s of %g ms, outside the 0 to %g ms a batch can take: its timing is refused", f.what, v, MaxSampleMS)
			}
		}
	}
	return nil
}
