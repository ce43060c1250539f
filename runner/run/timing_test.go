package run

import (
	"math"
	"testing"

	"github.com/xrun-dev/xrun/result"
)

// At the end of a run every kernel-clock timing adds the run's launch
// cost, and its throughput follows; a timing on the events stays.
func TestSettleLaunch(t *testing.T) {
	kernel := &result.Timing{Clock: result.ClockKernel, MedianMS: 0.0067, Samples: 3,
		Kernel: &result.KernelSummary{ClockSummary: result.ClockSummary{MedianMS: 0.0055}, LaunchMS: 0.0012}}
	events := &result.Timing{Clock: result.ClockEvents, MedianMS: 0.05, Samples: 3}
	rn := &runner{rec: &recorder{r: &result.Results{Cases: []result.Case{{Params: map[string]any{"dtype": "float32"}, Bytes: 1e6,
		Results: map[string]*result.ImplResult{"a": {Status: result.ImplOK, Timing: kernel}, "b": {Status: result.ImplOK, Timing: events}}}}}}}
	rn.settleLaunch(0.00098, false)
	if rn.rec.r.Methodology.LaunchMS != 0 || kernel.MedianMS != 0.0067 {
		t.Fatalf("too few gaps moved the launch cost: %v, %+v", rn.rec.r.Methodology.LaunchMS, kernel)
	}
	rn.settleLaunch(0.00098, true)
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }
	if !near(rn.rec.r.Methodology.LaunchMS, 0.00098) || !near(kernel.MedianMS, 0.0055+0.00098) || !near(kernel.Kernel.LaunchMS, 0.00098) {
		t.Errorf("launch %v, timing %+v", rn.rec.r.Methodology.LaunchMS, kernel)
	}
	if tp := rn.rec.r.Cases[0].Results["a"].Throughput; tp == nil || !near(tp.GBps, 1e6/(kernel.MedianMS/1e3)/1e9) {
		t.Errorf("throughput not recomputed: %+v", tp)
	}
	if events.MedianMS != 0.05 {
		t.Error("an event timing moved")
	}
}
