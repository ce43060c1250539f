package gpuinfo

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/result"
)

// Readings as `nvidia-smi --query-gpu=index,timestamp,clocks.sm,power.draw,
// clocks_event_reasons.active -lms 100` prints them on a power-limited H100
// (a second GPU idles beside it).
const monitorOut = `0, 2026/11/22 06:18:16.700, 345, 71.69, 0x0000000000000001
1, 2026/11/22 06:18:16.700, 345, 70.10, 0x0000000000000001
0, 2026/11/22 06:18:16.800, 1980, 420.10, 0x0000000000000000
1, 2026/11/22 06:18:16.800, 345, 70.10, 0x0000000000000001
0, 2026/11/22 06:18:16.900, 1455, 699.80, 0x0000000000000004
0, 2026/11/22 06:18:17.000, 1155, 701.20, 0x0000000000000004
0, 2026/11/22 06:18:17.100, 1380, 702.00, 0x0000000000000004
0, 2026/11/22 06:18:17.200, 1980, 250.00, 0x0000000000000000
`

var monitorCanon = []string{FieldIndex, fieldTimestamp, FieldSMClock, FieldPower, FieldReasons}

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.ParseInLocation(smiTimeLayout, s, time.Local)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMonitorClocks(t *testing.T) {
	m := &Monitor{}
	m.consume(strings.NewReader(monitorOut), monitorCanon)
	if n := len(m.Readings()); n != 8 {
		t.Fatalf("%d readings, want 8", n)
	}
	// Over the whole run: idle readings left out.
	got := m.Clocks(0, nil)
	want := &result.Clocks{Readings: 5, SMClockMHz: 1455, MinSMClockMHz: 1155, MaxSMClockMHz: 1980, MaxPowerW: 702,
		ClockEventReasons: []string{"sw_power_cap"}, ThrottledReadings: 3}
	if !equalClocks(got, want) {
		t.Errorf("Clocks(0, all) = %+v, want %+v", got, want)
	}
	if got.PowerW != 699.8 || got.ReasonReadings["sw_power_cap"] != 3 || got.MaxTemperatureC != 0 {
		t.Errorf("Clocks(0, all): median power %v W, sw_power_cap in %d readings, %d °C; want 699.8 W, 3, 0 (no temperature read)",
			got.PowerW, got.ReasonReadings["sw_power_cap"], got.MaxTemperatureC)
	}
	// One window: the last two readings.
	w := []Window{{From: at(t, "2026/11/22 06:18:17.050"), To: at(t, "2026/11/22 06:18:17.250")}}
	got = m.Clocks(0, w)
	want = &result.Clocks{Readings: 2, SMClockMHz: 1980, MinSMClockMHz: 1380, MaxSMClockMHz: 1980, MaxPowerW: 702,
		ClockEventReasons: []string{"sw_power_cap"}, ThrottledReadings: 1}
	if !equalClocks(got, want) {
		t.Errorf("Clocks(0, window) = %+v, want %+v", got, want)
	}
	if c := m.Clocks(1, nil); c != nil {
		t.Errorf("an idle GPU's readings summarise to %+v, want nil", c)
	}
	if c := m.Clocks(0, []Window{}); c != nil {
		t.Errorf("no window: %+v, want nil", c)
	}
}

func equalClocks(a, b *result.Clocks) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Readings == b.Readings && a.SMClockMHz == b.SMClockMHz && a.MinSMClockMHz == b.MinSMClockMHz &&
		a.MaxSMClockMHz == b.MaxSMClockMHz && a.MaxPowerW == b.MaxPowerW && a.ThrottledReadings == b.ThrottledReadings &&
		slices.Equal(a.ClockEventReasons, b.ClockEventReasons)
}

func TestMonitorBadLine(t *testing.T) {
	m := &Monitor{}
	m.consume(strings.NewReader("0, 2026/11/22 06:18:16.700, 1980\n0, nonsense, 1980, 100, 0x0\n"), monitorCanon)
	if n := len(m.Readings()); n != 1 {
		t.Errorf("%d readings, want 1 (the short line is an error)", n)
	}
	if m.err == nil {
		t.Error("no error recorded for a line with 3 of 5 values")
	}
	// An unreadable timestamp falls back to the arrival time.
	if rd := m.Readings()[0]; rd.At.IsZero() || rd.SMClockMHz != 1980 {
		t.Errorf("reading %+v", rd)
	}
}

// StartMonitor against a stand-in nvidia-smi that streams readings with
// -lms and rejects the newer name of the reasons field, as drivers before
// 535 do.
func TestStartMonitor(t *testing.T) {
	dir := t.TempDir()
	script := `#!/bin/sh
case "$1" in *clocks_event_reasons*) echo 'Field "clocks_event_reasons.active" is not a valid field to query.'; exit 2;; esac
echo "$@" > "$0.args"
line() { echo "0, $(date '+%Y/%m/%d %H:%M:%S.%3N'), 1410, 650.5, 0x0000000000000004, 61"; }
line
case "$*" in *-lms*) ;; *) exit 0;; esac
trap 'exit 0' TERM
while :; do sleep 0.05; line; done
`
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	m, err := StartMonitor(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Until the stand-in has printed two readings after the window opened:
	// a loaded machine takes longer than the 100 ms it asks for, and a fixed
	// sleep then saw none.
	from := time.Now()
	for deadline := from.Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		n := 0
		for _, rd := range m.Readings() {
			if !rd.At.Before(from) {
				n++
			}
		}
		if n >= 2 {
			break
		}
	}
	to := time.Now()
	if err := m.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	args, _ := os.ReadFile(filepath.Join(dir, "nvidia-smi.args"))
	if !strings.Contains(string(args), "clocks_throttle_reasons.active") || !strings.Contains(string(args), "-lms 100") {
		t.Errorf("monitor ran nvidia-smi %s", args)
	}
	c := m.Clocks(0, []Window{{From: from, To: to}})
	if c == nil || c.Readings < 2 || c.SMClockMHz != 1410 || c.ThrottledReadings != c.Readings ||
		!slices.Equal(c.ClockEventReasons, []string{"sw_power_cap"}) || c.MaxTemperatureC != 61 || c.PowerW != 650.5 {
		t.Errorf("Clocks = %+v", c)
	}
}
