package harness

import (
	"os/exec"
	"testing"
)

// The kernel clock's bookkeeping in harness.py (call_windows, launch_gaps)
// on CUPTI records as torch's profiler returns them: only the standard
// library is needed, so any python3 runs it.
func TestKernelClockWindows(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skipf("no python3: %v", err)
	}
	dir := t.TempDir()
	if _, err := WriteScript(dir); err != nil {
		t.Fatal(err)
	}
	prog := `
import sys
sys.path.insert(0, sys.argv[1])
import harness as h

# (correlation id, name, start ns, end ns), sorted by correlation id: the
# flush (memset, reduce), the hold, a call of two kernels, the mark; then a
# sample whose call ran nothing; then a hold cut short (no mark).
recs = [
    (10, "Memset (Device)", 0, 700), (11, "reduce_kernel", 800, 95000),
    (12, "xrun_hold", 95100, 300000),
    (13, "softmax_a", 302000, 307000), (14, "softmax_b", 308000, 310000),
    (15, "xrun_mark", 312000, 312900),
    (20, "reduce_kernel", 400000, 490000), (21, "xrun_hold", 490100, 600000), (22, "xrun_mark", 602000, 602800),
    (30, "xrun_hold", 700000, 800000), (31, "late_kernel", 801000, 802000),
]
w = h.call_windows(recs)
assert w == [(0.008, 0.007, 2), None], w

# A side-stream kernel launched inside the window that starts before the
# hold ends is the call's too (by correlation id, not by time).
recs = [(1, "xrun_hold", 0, 5000), (2, "side", 1000, 9000), (3, "main", 6000, 7000), (4, "xrun_mark", 9500, 9600)]
assert h.call_windows(recs) == [(0.008, 0.009, 2)], h.call_windows(recs)

# A mark without a hold (launch calibration, a stray launch) opens nothing.
assert h.call_windows([(1, "xrun_mark", 0, 10), (2, "k", 20, 30)]) == []

g = h.launch_gaps([(1, "xrun_touch", 0, 800), (2, "xrun_touch", 1900, 2700), (3, "other", 2800, 2900),
                   (4, "xrun_touch", 3800, 4600)])
assert g == [0.0011, 0.0011], g

# The launch cost's estimate is the interquartile mean: two clusters of
# gaps do not make it jump from one to the other as a median does.
assert abs(h.iq_mean([0.96] * 9 + [1.25] * 8) - h.iq_mean([0.96] * 8 + [1.25] * 9)) < 0.05
assert h.iq_mean([1.0, 2.0, 3.0, 100.0]) == 2.5, h.iq_mean([1.0, 2.0, 3.0, 100.0])
assert h.iq_mean([7.0]) == 7.0

# A touch sequence after the last sample (a hold with no mark) adds no call.
recs = [(1, "xrun_hold", 0, 10), (2, "k", 20, 30), (3, "xrun_mark", 40, 50),
        (4, "xrun_hold", 60, 70), (5, "xrun_touch", 80, 90), (6, "xrun_touch", 100, 110)]
assert h.call_windows(recs) == [(1e-05, 1e-05, 1)], h.call_windows(recs)
print("ok")
`
	out, err := exec.Command(py, "-c", prog, dir).CombinedOutput()
	if err != nil || string(out) != "ok\n" {
		t.Fatalf("python: %v\n%s", err, out)
	}
}
