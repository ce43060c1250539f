package timing

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/runner/harness"
)

func batch(events, kernel []float64) *harness.Samples {
	sm := &harness.Samples{SamplesMS: events, Cover: "hold", SamplingMS: 200, WarmupMS: 20}
	if kernel != nil {
		sm.KernelMS, sm.BusyMS, sm.Kernels = kernel, kernel, 1
	} else {
		sm.KernelNote = "a call ran no kernel, copy or memory set on the GPU"
	}
	return sm
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }

// Every batch with CUPTI readings and the hold: the figures are the kernel
// clock's (spans plus the launch), the events' beside them.
func TestTimingOnKernelClock(t *testing.T) {
	a := &acc{}
	a.add(batch([]float64{0.0078, 0.0079, 0.0080}, []float64{0.0054, 0.0055, 0.0056}), time.Second)
	a.add(batch([]float64{0.0078, 0.0081}, []float64{0.0054, 0.0057}), time.Second)
	tm := a.timing(false, 0.0011)
	if tm.Clock != result.ClockKernel || tm.Events == nil || tm.Kernel == nil || tm.ClockNote != "" {
		t.Fatalf("timing = %+v", tm)
	}
	if !near(tm.MedianMS, 0.0055+0.0011) || !near(tm.Kernel.MedianMS, 0.0055) || !near(tm.Events.MedianMS, 0.0079) {
		t.Errorf("medians: headline %v, kernel %v, events %v", tm.MedianMS, tm.Kernel.MedianMS, tm.Events.MedianMS)
	}
	if tm.Samples != 5 || tm.Events.Samples != 5 || tm.Kernel.Samples != 5 || tm.Kernel.Kernels != 1 {
		t.Errorf("samples %d/%d/%d, kernels %d", tm.Samples, tm.Events.Samples, tm.Kernel.Samples, tm.Kernel.Kernels)
	}
	if !near(a.sampled, 0.4) {
		t.Errorf("sampled %v s, want the workers' 0.4", a.sampled)
	}
	if h := a.headline(0.0011); len(h) != 5 || !near(h[0], 0.0065) {
		t.Errorf("headline samples %v", h)
	}
}

// One batch without CUPTI readings puts the timing on the events for good,
// and says why; so does a call the GPU could not be held back for.
func TestTimingFallsBackToEvents(t *testing.T) {
	a := &acc{}
	a.add(batch([]float64{0.0078, 0.0079}, []float64{0.0054, 0.0055}), time.Second)
	a.add(batch([]float64{0.0080}, nil), time.Second)
	a.add(batch([]float64{0.0078}, []float64{0.0054}), time.Second)
	tm := a.timing(false, 0.0011)
	if tm.Clock != result.ClockEvents || tm.Events != nil || tm.Kernel != nil || !strings.Contains(tm.ClockNote, "ran no kernel") {
		t.Fatalf("timing = %+v", tm)
	}
	if !near(tm.MedianMS, 0.00785) || tm.Samples != 4 {
		t.Errorf("median %v over %d, want the events' 0.00785 over 4", tm.MedianMS, tm.Samples)
	}

	b := &acc{}
	sm := batch([]float64{0.05, 0.051}, []float64{0.003, 0.003})
	sm.Cover = "none"
	b.add(sm, time.Second)
	if tm := b.timing(false, 0.0011); tm.Clock != result.ClockEvents || !strings.Contains(tm.ClockNote, "cover none") {
		t.Errorf("uncovered call: %+v", tm)
	}
}

// A worker that does not say how long it sampled: the batch's wall time
// less its warm-up. On the CPU the clock is the host's.
func TestTimingOldWorkerAndCPU(t *testing.T) {
	a := &acc{}
	a.add(&harness.Samples{SamplesMS: []float64{1, 2, 3}, WarmupMS: 100}, 600*time.Millisecond)
	if !near(a.sampled, 0.5) {
		t.Errorf("sampled %v, want 0.5", a.sampled)
	}
	if tm := a.timing(true, 0); tm.Clock != result.ClockPerfCounter || tm.MedianMS != 2 {
		t.Errorf("cpu timing %+v", tm)
	}
}

// At the end of a run every kernel-clock timing adds the run's launch cost,
// the interquartile mean of every gap: its figures move by the
// difference, its spread does not; a timing on the events stays.
func TestShiftLaunch(t *testing.T) {
	a := &acc{}
	a.add(batch([]float64{0.0078, 0.0079, 0.0080}, []float64{0.0054, 0.0055, 0.0056}), time.Second)
	early := a.timing(false, 0.0012)
	got := early
	got.Kernel = &result.KernelSummary{}
	*got.Kernel = *early.Kernel

	l := New(Config{FirstLaunchMS: func() float64 { return 0.0012 }})
	if _, ok := l.Launch(); ok || l.launch() != 0.0012 {
		t.Fatalf("without gaps: launch %v, want the first worker's", l.launch())
	}
	for i := 0; i < 40; i++ {
		l.gaps = append(l.gaps, 0.00098)
	}
	l.gaps = append(l.gaps, 0.0013, 0.0013, 0.0086) // a few outliers the interquartile mean leaves out
	launch, ok := l.Launch()
	if !ok || !near(launch, 0.00098) || !near(l.launch(), launch) {
		t.Fatalf("launch %v (%v), want 0.00098", launch, ok)
	}
	if !ShiftLaunch(&got, launch) || !near(got.Kernel.LaunchMS, 0.00098) {
		t.Fatalf("shifted timing %+v", got)
	}
	if !near(got.MedianMS, 0.0055+0.00098) || !near(got.Q3MS-got.Q1MS, early.Q3MS-early.Q1MS) || !near(got.Kernel.MedianMS, 0.0055) {
		t.Errorf("settled timing %+v", got)
	}
	if got.StderrRel*got.MedianMS-early.StderrRel*(0.0055+0.0012) > 1e-15 {
		t.Errorf("the standard error moved: %v", got.StderrRel)
	}
	if ShiftLaunch(&got, launch) {
		t.Error("a timing already at the launch cost moved")
	}
	ev := &result.Timing{MedianMS: 0.05, Clock: result.ClockEvents}
	if ShiftLaunch(ev, launch) || ev.MedianMS != 0.05 {
		t.Error("an event timing moved")
	}
}
