package regress

import (
	"fmt"
	"math"
)

// The clock rule: whether a timing's own GPU readings make it noisy
// (docs/regressions.md, "Heavy kernels: the power cap is the norm").
//
//   - a thermal or hardware slowdown in any of the timing's readings is
//     noisy: it is never a series' steady state;
//   - the power cap is not: a large GEMM or attention kernel on an H100,
//     H200 or B200 runs into it in every run, its clocks 8-10% under the
//     GPU's maximum, and its medians repeat within 1% there;
//   - a timing whose median SM clock sits well under its series' usual
//     clocks is noisy: more than Score robust standard deviations and
//     more than Floor under the median clock of the series' last Window
//     timings with readings (since the last change point), once there
//     are MinHistory of them. Before that, only a slowdown is noisy.
//
// Every timing with readings and no slowdown joins the usual clocks,
// noisy or not, so that a change in what the kernel draws (new code at
// the same key) moves the norm within half a window instead of leaving
// the series noisy for good.

// SlowdownReason begins the noisy reason of a timing taken during a
// thermal or hardware slowdown.
const SlowdownReason = "timed during a thermal or hardware slowdown"

// Clocks is what the GPU did during one timing, as the history keeps it.
type Clocks struct {
	// Readings is how many readings were taken (0: none, as in results
	// from before the runner read clocks per timing); SMClockMHz their
	// median SM clock.
	Readings   int
	SMClockMHz int
	// Slowdown says why the readings saw a thermal or hardware slowdown
	// ("" when they did not).
	Slowdown string
}

// ClockRule holds the clock rule's parameters.
type ClockRule struct {
	Window     int
	MinHistory int
	Score      float64
	// Floor is how far under the usual median clock a timing's must be
	// (0.15: 15 %): clock readings every 100 ms dipped 8-10 % in single
	// timings of an H200 GEMM whose medians did not move (0.2-0.8 % over
	// five runs), so a smaller drop says nothing of the time.
	Floor float64
}

// DefaultClocks is the clock rule xrun applies: the last 20 timings, at
// least 3 of them, r > 4 and 15 % under their median clock.
func DefaultClocks() ClockRule { return ClockRule{Window: 20, MinHistory: 3, Score: 4, Floor: 0.15} }

// Noise says, for each timing of a series in time order, why its clocks
// make it noisy ("" when they do not). change marks the timings that
// start a new baseline (an accepted change point): the usual clocks start
// again there. change may be nil.
func (cr ClockRule) Noise(cs []Clocks, change []bool) []string {
	return cr.NoiseFrom(&State{}, cs, change)
}

// NoiseFrom is Noise resumed from st's usual clocks (State.Clocks: those
// of the timings before cs), which it leaves as they stand after cs.
func (cr ClockRule) NoiseFrom(st *State, cs []Clocks, change []bool) []string {
	out := make([]string, len(cs))
	usual := st.Clocks
	for i, c := range cs {
		if change != nil && change[i] {
			usual = nil
		}
		if c.Readings == 0 {
			continue
		}
		if c.Slowdown != "" {
			out[i] = SlowdownReason + ": " + c.Slowdown
			continue
		}
		h := usual[max(0, len(usual)-cr.Window):]
		if len(h) >= cr.MinHistory {
			med, mad := MedianMAD(h)
			low := med - math.Max(cr.Score*1.4826*mad, cr.Floor*med)
			if float64(c.SMClockMHz) < low {
				lo, hi := minMax(h)
				out[i] = fmt.Sprintf("timed at %d MHz, well under this series' usual SM clock of %.0f MHz (%.0f-%.0f MHz over its last %d runs)",
					c.SMClockMHz, med, lo, hi, len(h))
			}
		}
		usual = last(append(usual, float64(c.SMClockMHz)), cr.Window)
	}
	st.Clocks = usual
	return out
}

func minMax(xs []float64) (lo, hi float64) {
	lo, hi = xs[0], xs[0]
	for _, x := range xs[1:] {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}
