package analyze

import (
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/result"
)

func TestThrottled(t *testing.T) {
	load := func(clock int, reasons ...string) *result.GPUState {
		return &result.GPUState{SMClockMHz: clock, Utilization: 100, ClockEventReasons: append([]string{}, reasons...)}
	}
	idle := &result.GPUState{SMClockMHz: 345, Utilization: 0, ClockEventReasons: []string{"gpu_idle"}}
	for _, c := range []struct {
		name          string
		before, after *result.GPUState
		want          bool
		reason        string
	}{
		{"no readings", nil, nil, false, ""},
		{"steady", load(1980), load(1980), false, ""},
		{"idle after", load(1980), idle, false, ""},
		{"benign reasons", load(1410), load(1410, "applications_clocks_setting"), false, ""},
		// The power cap after a heavy kernel is its steady state, not throttling.
		{"power cap", load(1980), load(1830, "sw_power_cap"), false, ""},
		{"hardware slowdown", load(1980), load(1500, "sw_power_cap", "hw_slowdown"), true, "hw_slowdown"},
		{"thermal", nil, load(1600, "gpu_idle", "hw_thermal_slowdown"), true, "hw_thermal_slowdown"},
		{"clock drop under load", load(1980), load(1700), true, "1980 MHz to 1700 MHz"},
		{"small drop", load(1980), load(1800), false, ""},
		{"from idle", idle, load(1980), false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, reason := Throttled(c.before, c.after)
			if got != c.want || !strings.Contains(reason, c.reason) || (!got && reason != "") {
				t.Errorf("Throttled = (%v, %q), want (%v, containing %q)", got, reason, c.want, c.reason)
			}
		})
	}
}

func TestThrottledDuring(t *testing.T) {
	tests := []struct {
		name  string
		c     *result.Clocks
		maxSM int
		want  bool
		why   string
	}{
		{"no readings", nil, 1980, false, ""},
		{"full clock", &result.Clocks{Readings: 10, SMClockMHz: 1980, MinSMClockMHz: 1965, MaxSMClockMHz: 1980}, 1980, false, ""},
		// The power cap is a heavy kernel's steady state (PowerCapped), not throttling.
		{"power cap", &result.Clocks{Readings: 10, SMClockMHz: 1455, MinSMClockMHz: 1155, MaxSMClockMHz: 1980,
			ClockEventReasons: []string{"sw_power_cap"}, ThrottledReadings: 9}, 1980, false, ""},
		{"low clock, no reason", &result.Clocks{Readings: 4, SMClockMHz: 1500, MinSMClockMHz: 1500, MaxSMClockMHz: 1500}, 1980, true, "median SM clock more than 5% under its maximum with no reason given"},
		{"power cap at full clock", &result.Clocks{Readings: 7, SMClockMHz: 1965, MinSMClockMHz: 1965, MaxSMClockMHz: 1965,
			ClockEventReasons: []string{"sw_power_cap"}, ThrottledReadings: 7}, 1980, false, ""},
		{"power cap, maximum unknown", &result.Clocks{Readings: 7, SMClockMHz: 1965, MinSMClockMHz: 1965, MaxSMClockMHz: 1965,
			ClockEventReasons: []string{"sw_power_cap"}, ThrottledReadings: 7}, 0, false, ""},
		// A thermal slowdown is noise whatever the clock reads.
		{"thermal slowdown", &result.Clocks{Readings: 5, SMClockMHz: 1410, MinSMClockMHz: 1290, MaxSMClockMHz: 1755,
			ClockEventReasons: []string{"sw_power_cap", "hw_thermal_slowdown"}, ThrottledReadings: 5,
			ReasonReadings: map[string]int{"sw_power_cap": 5, "hw_thermal_slowdown": 3}}, 1980, true,
			"hw_thermal_slowdown in 3 of 5 readings (SM clock median 1410 MHz, 1290-1755 MHz)"},
		{"thermal slowdown, maximum unknown", &result.Clocks{Readings: 2, SMClockMHz: 1980, MinSMClockMHz: 1980, MaxSMClockMHz: 1980,
			ClockEventReasons: []string{"sw_thermal_slowdown"}, ThrottledReadings: 1}, 0, true, "sw_thermal_slowdown (SM clock"},
		{"low clock, maximum unknown", &result.Clocks{Readings: 4, SMClockMHz: 1500, MinSMClockMHz: 1500, MaxSMClockMHz: 1500}, 0, false, ""},
		{"one dip", &result.Clocks{Readings: 10, SMClockMHz: 1980, MinSMClockMHz: 1200, MaxSMClockMHz: 1980}, 1980, false, ""},
	}
	for _, tt := range tests {
		got, why := ThrottledDuring(tt.c, tt.maxSM)
		if got != tt.want || !strings.Contains(why, tt.why) {
			t.Errorf("%s: ThrottledDuring = %v, %q; want %v, %q", tt.name, got, why, tt.want, tt.why)
		}
	}
}

// PowerCapped on the readings of an H200 run of an fp16 GEMM
// (experiments/autotuned-matmul/results/2026-11-29-h200/run2): the power
// cap at N = 8192 and in the 4096 timing whose clocks dipped; not at N =
// 4096 where the clock stayed within 5 % of the maximum.
func TestPowerCapped(t *testing.T) {
	tests := []struct {
		name string
		c    *result.Clocks
		want bool
		why  string
	}{
		{"N=8192 cublas", &result.Clocks{Readings: 5, SMClockMHz: 1755, MinSMClockMHz: 1455, MaxSMClockMHz: 1980, MaxPowerW: 548.21,
			ClockEventReasons: []string{"sw_power_cap"}, ThrottledReadings: 3, ReasonReadings: map[string]int{"sw_power_cap": 3}}, true,
			"sw_power_cap in 3 of 5 readings (SM clock median 1755 MHz, 1455-1980 MHz, maximum 1980 MHz)"},
		{"N=4096 triton, dipped", &result.Clocks{Readings: 3, SMClockMHz: 1875, MinSMClockMHz: 1800, MaxSMClockMHz: 1965,
			ClockEventReasons: []string{"sw_power_cap"}, ThrottledReadings: 3}, true, "sw_power_cap (SM clock median 1875 MHz"},
		{"N=4096 cublas", &result.Clocks{Readings: 5, SMClockMHz: 1965, MinSMClockMHz: 1830, MaxSMClockMHz: 1980,
			ClockEventReasons: []string{"sw_power_cap"}, ThrottledReadings: 4}, false, ""},
		{"N=512", &result.Clocks{Readings: 5, SMClockMHz: 1980, MinSMClockMHz: 1980, MaxSMClockMHz: 1980, ClockEventReasons: []string{}}, false, ""},
	}
	for _, tt := range tests {
		got, why := PowerCapped(tt.c, 1980)
		if got != tt.want || !strings.Contains(why, tt.why) {
			t.Errorf("%s: PowerCapped = %v, %q; want %v, %q", tt.name, got, why, tt.want, tt.why)
		}
		if th, why := ThrottledDuring(tt.c, 1980); th {
			t.Errorf("%s: ThrottledDuring = true (%s); the power cap is not throttling", tt.name, why)
		}
	}
}
