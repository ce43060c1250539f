package regress

import (
	"strings"
	"testing"
)

// clocksOf is a series' timings read at these median SM clocks.
func clocksOf(mhz ...int) []Clocks {
	out := make([]Clocks, len(mhz))
	for i, m := range mhz {
		out[i] = Clocks{Readings: 5, SMClockMHz: m}
	}
	return out
}

func TestClockNoise(t *testing.T) {
	ru := DefaultClocks()
	// SDPA at N = 4096 on an H200 over twelve nights at the power cap
	// (experiments/heavy-kernels/results/2026-12-02-h200): one reading
	// 9 % under the rest, its median within 1.3 % of the others'.
	capped := clocksOf(1785, 1965, 1965, 1965, 1965, 1965, 1965, 1965, 1980, 1965, 1890, 1980)
	for i, why := range ru.Noise(capped, nil) {
		if why != "" {
			t.Errorf("night %d at %d MHz: %q; the power cap is the norm", i+1, capped[i].SMClockMHz, why)
		}
	}
	// The same series, then a night at 1500 MHz: well under its usual clocks.
	low := append(capped, Clocks{Readings: 4, SMClockMHz: 1500})
	got := ru.Noise(low, nil)
	if w := got[len(got)-1]; !strings.Contains(w, "timed at 1500 MHz, well under this series' usual SM clock of 1965 MHz (1785-1980 MHz over its last 12 runs)") {
		t.Errorf("a night at 1500 MHz: %q", w)
	}
	// A GEMM at N = 8192 capped at 1665-1815 MHz from its first night: its
	// own clocks are its norm, far under the GPU's 1980.
	gemm := clocksOf(1755, 1695, 1695, 1785, 1755, 1665, 1755, 1755, 1815, 1665)
	for i, why := range ru.Noise(gemm, nil) {
		if why != "" {
			t.Errorf("GEMM night %d: %q", i+1, why)
		}
	}
	// A slowdown is noisy whatever the clock, from the first night on.
	slow := []Clocks{{Readings: 5, SMClockMHz: 1980, Slowdown: "hw_slowdown in 1 of 5 readings"}}
	if w := ru.Noise(slow, nil)[0]; w != SlowdownReason+": hw_slowdown in 1 of 5 readings" {
		t.Errorf("slowdown: %q", w)
	}
	// Too few nights to know a norm; no readings (older results): not judged by clocks.
	if w := ru.Noise(clocksOf(1980, 1980, 900), nil)[2]; w != "" {
		t.Errorf("third night: %q; two nights are no norm", w)
	}
	if w := ru.Noise(append(clocksOf(1980, 1980, 1980), Clocks{}), nil)[3]; w != "" {
		t.Errorf("no readings: %q", w)
	}
	// A change point starts the usual clocks again: a kernel that draws more
	// now runs lower, and is its own norm.
	moved := clocksOf(1980, 1980, 1980, 1980, 1600, 1600, 1600, 1600)
	change := make([]bool, len(moved))
	change[4] = true
	for i, why := range ru.Noise(moved, change) {
		if why != "" {
			t.Errorf("after the change point, night %d: %q", i+1, why)
		}
	}
	if w := ru.Noise(moved, nil)[4]; w == "" {
		t.Error("without the change point, the first night at 1600 MHz is noisy")
	}
}
