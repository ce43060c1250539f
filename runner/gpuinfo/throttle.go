package gpuinfo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/xrun-dev/xrun/runner/result"
)

// Clock event reasons, as nvidia-smi's clocks_event_reasons.active bitmask
// (NVML's nvmlClocksEventReason* constants) names them.
var reasonBits = []struct {
	bit  uint64
	name string
}{
	{0x1, "gpu_idle"},
	{0x2, "applications_clocks_setting"},
	{0x4, "sw_power_cap"},
	{0x8, "hw_slowdown"},
	{0x10, "sync_boost"},
	{0x20, "sw_thermal_slowdown"},
	{0x40, "hw_thermal_slowdown"},
	{0x80, "hw_power_brake_slowdown"},
	{0x100, "display_clock_setting"},
}

// benignReasons lower clocks without meaning the measurement was throttled:
// an idle GPU, or clocks an administrator pinned on purpose.
var benignReasons = []string{"gpu_idle", "applications_clocks_setting"}

// ParseReasons decodes a clock event reasons bitmask ("0x0000000000000044")
// into reason names; unknown bits become "unknown_0x...". A value that is
// not a number ("[N/A]", "Not Active") yields no reasons.
func ParseReasons(mask string) []string {
	s := strings.TrimSpace(mask)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return []string{}
	}
	out := []string{}
	for _, r := range reasonBits {
		if v&r.bit != 0 {
			out = append(out, r.name)
			v &^= r.bit
		}
	}
	for bit := uint64(1); v != 0; bit <<= 1 {
		if v&bit != 0 {
			out = append(out, fmt.Sprintf("unknown_%#x", bit))
			v &^= bit
		}
	}
	return out
}

// Throttled reports whether the GPU's clocks were held back: clock event
// reasons other than gpu_idle and applications_clocks_setting in after, or
// an SM clock drop of more than 10% from before to after while both readings
// were under load (a drop to an idle clock after the work ended is not
// throttling). reason says why in words. Either reading may be nil.
func Throttled(before, after *result.GPUState) (bool, string) {
	if after == nil {
		return false, ""
	}
	if active := holdingBack(after.ClockEventReasons); len(active) > 0 {
		return true, "clock event reasons active: " + strings.Join(active, ", ")
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

// holdingBack returns the reasons that hold clocks back: all but the benign ones.
func holdingBack(reasons []string) []string {
	var out []string
	for _, r := range reasons {
		if !slices.Contains(benignReasons, r) {
			out = append(out, r)
		}
	}
	return out
}

// heldBack is how far under the GPU's maximum the median SM clock of a
// timing must be for it to count as throttled.
const heldBack = 0.05

// ThrottledDuring reports whether the readings taken while samples were
// timed show clocks held back: a median SM clock more than 5% under
// maxSMClock (the GPU's maximum). A clock event reason alone is not enough
// where the maximum is known: under a heavy kernel an H100 reports
// sw_power_cap in most readings while it runs at 1965 of its 1980 MHz,
// and a rule that called that throttled called every such timing noisy.
// Where the maximum is unknown (0), a clock event reason other than
// gpu_idle and applications_clocks_setting in any reading is. reason says
// how often and at what clocks, in words.
func ThrottledDuring(c *result.Clocks, maxSMClock int) (bool, string) {
	if c == nil || c.Readings == 0 {
		return false, ""
	}
	clocks := fmt.Sprintf("SM clock median %d MHz, %d-%d MHz", c.SMClockMHz, c.MinSMClockMHz, c.MaxSMClockMHz)
	if maxSMClock > 0 {
		clocks += fmt.Sprintf(", maximum %d MHz", maxSMClock)
		if float64(c.SMClockMHz) >= (1-heldBack)*float64(maxSMClock) {
			return false, ""
		}
	}
	if c.ThrottledReadings > 0 {
		return true, fmt.Sprintf("%s in %d of %d readings (%s)", strings.Join(c.ClockEventReasons, ", "),
			c.ThrottledReadings, c.Readings, clocks)
	}
	if maxSMClock > 0 {
		return true, "median SM clock more than 5% under its maximum (" + clocks + ")"
	}
	return false, ""
}
