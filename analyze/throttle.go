package analyze

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xrun-dev/xrun/result"
)

// The throttle rules: what a GPU's clock readings say of a run and of
// each timing (the readings are runner/gpuinfo's).

// PowerCap is the reason a GPU gives while its power limit holds its
// clocks back: the steady state of a heavy kernel (a large GEMM or
// attention on an H100, H200 or B200), not noise.
const PowerCap = "sw_power_cap"

// slowdownReasons hold clocks back because of heat or the board's own
// protection (an external power brake, a hardware slowdown): never a
// series' steady state, so a timing taken under one is noisy.
var slowdownReasons = []string{"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}

// IsSlowdown reports whether reason is a thermal or hardware slowdown.
func IsSlowdown(reason string) bool { return slices.Contains(slowdownReasons, reason) }

// Throttled reports whether the GPU's clocks were held back over the run:
// a thermal or hardware slowdown in after, or an SM clock drop of more
// than 10% from before to after while both readings were under load (a
// drop to an idle clock after the work ended is not throttling). The power
// cap alone is not: a heavy kernel runs at it (PowerCap). reason says why
// in words. Either reading may be nil. The readings bound the run, not any
// one timing: a timing is judged by its own readings (SlowedDown).
func Throttled(before, after *result.GPUState) (bool, string) {
	if after == nil {
		return false, ""
	}
	var slow []string
	for _, r := range after.ClockEventReasons {
		if IsSlowdown(r) {
			slow = append(slow, r)
		}
	}
	if len(slow) > 0 {
		return true, "clock event reasons active: " + strings.Join(slow, ", ")
	}
	if before == nil || !underLoad(before) || !underLoad(after) || before.SMClockMHz <= 0 {
		return false, ""
	}
	drop := float64(before.SMClockMHz-after.SMClockMHz) / float64(before.SMClockMHz)
	if drop > 0.10 {
		return true, fmt.Sprintf("SM clock fell from %d MHz to %d MHz (-%.0f%%) under load",
			before.SMClockMHz, after.SMClockMHz, drop*100)
	}
	return false, ""
}

func underLoad(s *result.GPUState) bool {
	return s.Utilization > 0 && !slices.Contains(s.ClockEventReasons, "gpu_idle")
}

// heldBack is how far under the GPU's maximum the median SM clock of a
// timing must be for it to count as held back.
const heldBack = 0.05

// SlowedDown reports whether a timing's own readings saw a thermal or
// hardware slowdown (IsSlowdown) in any reading; why says which, how
// often and at what clocks.
func SlowedDown(c *result.Clocks) (bool, string) {
	if c == nil || c.Readings == 0 {
		return false, ""
	}
	var parts []string
	for _, r := range c.ClockEventReasons {
		if IsSlowdown(r) {
			parts = append(parts, r+readingsOf(c, r))
		}
	}
	if len(parts) == 0 {
		return false, ""
	}
	return true, fmt.Sprintf("%s (SM clock median %d MHz, %d-%d MHz)", strings.Join(parts, ", "), c.SMClockMHz, c.MinSMClockMHz, c.MaxSMClockMHz)
}

// readingsOf says in how many of c's readings reason was active: " in 3
// of 5 readings", or "" where c does not count reasons one by one.
func readingsOf(c *result.Clocks, reason string) string {
	if n, ok := c.ReasonReadings[reason]; ok {
		return fmt.Sprintf(" in %d of %d readings", n, c.Readings)
	}
	return ""
}

// PowerCapped reports whether a timing ran at the GPU's power cap: the
// power cap among its readings' reasons and, where maxSMClock (the GPU's
// maximum) is known, a median SM clock more than 5% under it. That is the
// steady state of a heavy kernel, judged against its series' usual clocks
// (client/history), not noise. why says how often and at what clocks.
func PowerCapped(c *result.Clocks, maxSMClock int) (bool, string) {
	if c == nil || c.Readings == 0 || !slices.Contains(c.ClockEventReasons, PowerCap) {
		return false, ""
	}
	if maxSMClock > 0 && float64(c.SMClockMHz) >= (1-heldBack)*float64(maxSMClock) {
		return false, ""
	}
	return true, PowerCap + readingsOf(c, PowerCap) + " (" + clockWords(c, maxSMClock) + ")"
}

func clockWords(c *result.Clocks, maxSMClock int) string {
	s := fmt.Sprintf("SM clock median %d MHz, %d-%d MHz", c.SMClockMHz, c.MinSMClockMHz, c.MaxSMClockMHz)
	if maxSMClock > 0 {
		s += fmt.Sprintf(", maximum %d MHz", maxSMClock)
	}
	if c.PowerW > 0 {
		s += fmt.Sprintf(", %.0f W", c.PowerW)
	}
	return s
}

// ThrottledDuring reports whether the readings taken while samples were
// timed show clocks held back by something other than the power cap: a
// thermal or hardware slowdown (SlowedDown), or, where maxSMClock (the
// GPU's maximum) is known, a median SM clock more than 5% under it with no
// reason given. Under the power cap alone (PowerCapped) a heavy kernel
// runs 8-10% under its maximum on an H200 in its steady state, and a rule
// that called that throttled called every such timing noisy. reason says
// how often and at what clocks, in words.
func ThrottledDuring(c *result.Clocks, maxSMClock int) (bool, string) {
	if slow, why := SlowedDown(c); slow {
		return true, why
	}
	if c == nil || c.Readings == 0 || maxSMClock <= 0 || slices.Contains(c.ClockEventReasons, PowerCap) {
		return false, ""
	}
	if float64(c.SMClockMHz) >= (1-heldBack)*float64(maxSMClock) {
		return false, ""
	}
	return true, "median SM clock more than 5% under its maximum with no reason given (" + clockWords(c, maxSMClock) + ")"
}
