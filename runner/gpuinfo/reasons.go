package gpuinfo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
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
