"""The GPU code's pure parts: the kernel clock's bookkeeping on CUPTI
records as the readers return them, the spin's rule, the hold's
time-out and the flush size. The GPU paths themselves run on fake CUDA in
the Go tests (worker_test.go) and on real GPUs in the GPU suite."""
import pytest

from xrun_harness.gpu.flush import flush_size
from xrun_harness.gpu.hold import HOLD_PTX, hold_max_ms
from xrun_harness.gpu.kernelclock import Reading, call_windows, iq_mean, launch_gaps, read_batch
from xrun_harness.gpu.spin import Spin
from xrun_harness.protocol import Samples

MIB = 1 << 20


def test_call_windows():
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
    assert call_windows(recs) == [(0.008, 0.007, 2), None]


def test_call_windows_by_correlation_id():
    # A side-stream kernel launched inside the window that starts before the
    # hold ends is the call's too (by correlation id, not by time).
    recs = [(1, "xrun_hold", 0, 5000), (2, "side", 1000, 9000), (3, "main", 6000, 7000), (4, "xrun_mark", 9500, 9600)]
    assert call_windows(recs) == [(0.008, 0.009, 2)]
    # A mark without a hold (launch calibration, a stray launch) opens nothing.
    assert call_windows([(1, "xrun_mark", 0, 10), (2, "k", 20, 30)]) == []
    # A touch sequence after the last sample (a hold with no mark) adds no call.
    recs = [(1, "xrun_hold", 0, 10), (2, "k", 20, 30), (3, "xrun_mark", 40, 50),
            (4, "xrun_hold", 60, 70), (5, "xrun_touch", 80, 90), (6, "xrun_touch", 100, 110)]
    assert call_windows(recs) == [(1e-05, 1e-05, 1)]


def test_launch_gaps_and_their_mean():
    g = launch_gaps([(1, "xrun_touch", 0, 800), (2, "xrun_touch", 1900, 2700), (3, "other", 2800, 2900),
                     (4, "xrun_touch", 3800, 4600)])
    assert g == [0.0011, 0.0011]
    # The interquartile mean: two clusters of gaps do not make it jump from
    # one to the other as a median does.
    assert abs(iq_mean([0.96] * 9 + [1.25] * 8) - iq_mean([0.96] * 8 + [1.25] * 9)) < 0.05
    assert iq_mean([1.0, 2.0, 3.0, 100.0]) == 2.5
    assert iq_mean([7.0]) == 7.0


def window(i, kernels):
    base = i * 100
    out = [(base, "xrun_hold", 0, 10)]
    out += [(base + 1 + k, "k%d" % k, 20 + 10 * k, 25 + 10 * k) for k in range(kernels)]
    return out + [(base + 50, "xrun_mark", 90, 95)]


def test_read_batch():
    recs = window(0, 2) + window(1, 1) + window(2, 2) + [(900, "xrun_touch", 0, 5), (901, "xrun_touch", 1005, 1010)]
    r = read_batch(recs, [True, False, True], 2)
    assert r == Reading(kernel_ms=[1.5e-05, 1.5e-05], busy_ms=[1e-05, 1e-05], kernels=2, launch_gaps_ms=[0.001])
    assert read_batch(recs, [True, True], 2).note == "CUPTI recorded 3 of the batch's 2 calls"
    assert read_batch(recs, [True, True, True], 2).note == "3 kernel readings for 2 samples"
    assert read_batch(window(0, 0), [True], 1).note == "a call ran no kernel, copy or memory set on the GPU"
    ev = Samples(samples_ms=[], warmup_calls=0, warmup_ms=0.0, timer="cuda_events", sampling_ms=0.0)
    Reading(note="why").apply(ev)
    assert ev.kernel_note == "why" and ev.kernel_ms is None


def test_hold_max_ms():
    assert hold_max_ms(0.1) == 20.0 and hold_max_ms(5.0) == 50.0 and hold_max_ms(100.0) == 500.0


def test_hold_ptx_names_its_kernels():
    for name in (b"xrun_hold", b"xrun_mark", b"xrun_touch"):
        assert b".entry " + name in HOLD_PTX
    assert HOLD_PTX.endswith(b"\0")


def test_spin_limits():
    assert Spin().limits(1.0, False) == (0, 0)  # not calibrated: no spin
    s = Spin(cycles_per_ms=1000.0)
    assert s.limits(0.0, False) == (50, 10000)  # at least 50 us
    assert s.limits(0.1, False) == (170, 10000)  # 1.5 x 0.1 ms + 20 us
    assert s.limits(5.0, False) == (1000, 10000)  # at most 1 ms
    assert s.limits(0.1, True) == (0, 10000)  # uncovered: none
    assert s.ms(170) == 0.17


def test_spin_doubles_on_systematic_early_starts():
    # 5% or more early starts, over at least 100 samples since the spin last changed.
    s = Spin(cycles_per_ms=1000.0)
    for _ in range(94):
        s.kept()
    assert [s.early_start(100, 10000) for _ in range(5)] == [None] * 5  # 5 of 99: too few samples yet
    assert s.early_start(100, 10000) == 200  # 6 of 100
    s = Spin(cycles_per_ms=1000.0)
    for _ in range(95):
        s.kept()
    assert [s.early_start(100, 10000) for _ in range(5)] == [None] * 4 + [200]  # 5 of 100
    assert (s.longest, s.taken, s.early) == (200, 0, 0)
    assert s.limits(0.0, False) == (200, 10000)  # later batches keep it


def test_spin_ignores_rare_early_starts_and_caps():
    s = Spin(cycles_per_ms=1000.0)
    for i in range(1000):
        s.kept()
        if i % 30 == 0:
            assert s.early_start(100, 10000) is None  # 1 in 30 (a host that stalls now and then)
    s = Spin(cycles_per_ms=1000.0)
    for _ in range(100):
        s.kept()
    got = [s.early_start(8000, 10000) for _ in range(6)]  # 6 of 106
    assert got == [None] * 5 + [10000]  # doubled, up to the cap


@pytest.mark.parametrize("asked, l2, size", [
    (0, 50 * MIB, 256 * MIB), (0, 128 * MIB, 512 * MIB), (MIB, 50 * MIB, MIB), (1001, 0, 1000), (-1, 0, 256 * MIB),
])
def test_flush_size(asked, l2, size):
    assert flush_size(asked, l2) == size
