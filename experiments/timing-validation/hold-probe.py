"""What the hold kernel changes, and where mm_small's last 0.7 us over ncu
comes from. Times the three cases the runner's way (sync, flush, sync, a
kernel that keeps the stream waiting, start event, call, end event, sync)
with the GPU held back by:

* the hold kernel (the harness's Hold: released by the host once the end
  event is enqueued), or
* a 0.2 ms spin kernel (torch.cuda._sleep), the previous method,

and, under the hold, with L2 flushes of different kinds and sizes, and an
empty timed region (the cost of the two events themselves).

    python3 hold-probe.py > table.md

For each row: median, q1, q3, samples whose start event had already
completed when checked (spin: GPU idled inside the timed region; hold:
the hold timed out) and wall time per sample.
"""

import os
import statistics
import sys
import time

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "runner", "harness"))  # the xrun_harness package
sys.path.insert(0, os.path.join(here, "..", "..", "kernels"))

from timing import cases, kernel  # noqa: E402
from xrun_harness.gpu.flush import fastest, readers as flush_readers  # noqa: E402
from xrun_harness.gpu.hold import Hold  # noqa: E402
from xrun_harness.gpu.spin import calibrate  # noqa: E402

MIB = 1 << 20


def cycles_per_ms():
    """The harness's own calibration of torch.cuda._sleep."""
    return calibrate(torch)


class Flush:
    def __init__(self, kind, nbytes):
        self.kind = kind
        self.buf = torch.ones(nbytes // 4, dtype=torch.int32, device="cuda") if isinstance(kind, str) and kind != "none" else None
        self.out = torch.zeros((), dtype=torch.int64, device="cuda")

    def __call__(self):
        if callable(self.kind):
            self.kind()
        elif self.kind == "read":
            torch.sum(self.buf, 0, dtype=torch.int64, out=self.out)
        elif self.kind == "zero":
            self.buf.zero_()


PHASES = ("sync", "flush", "arm", "enqueue", "release+sync", "elapsed")


def sample(call, n, flush, cover, hold, per_ms, flush_sync=True):
    """n samples; returns them, how many started early (spin) or timed out
    (hold), wall ms per sample and host ms per sample in each phase."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    stream = torch.cuda.current_stream().cuda_stream
    out, early = [], 0
    host = dict.fromkeys(PHASES, 0.0)
    pc = time.perf_counter
    t0 = pc()
    for _ in range(n):
        a = pc()
        torch.cuda.synchronize()
        b = pc()
        if flush.kind != "none":
            flush()
            if flush_sync:
                torch.cuda.synchronize()
        c = pc()
        if cover == "hold":
            hold.arm(stream, 0.0, 100.0)
            d = pc()
            s.record()
            call()
            e.record()
            gap = s.query()
            f = pc()
            hold.release()
        else:
            torch.cuda._sleep(int(0.2 * per_ms))
            d = pc()
            s.record()
            call()
            gap = s.query()
            e.record()
            f = pc()
        torch.cuda.synchronize()
        g = pc()
        early += bool(gap)
        out.append(s.elapsed_time(e))
        h = pc()
        for k, (x, y) in zip(PHASES, ((a, b), (b, c), (c, d), (d, f), (f, g), (g, h))):
            host[k] += (y - x) * 1e3
    wall = (pc() - t0) / n * 1e3
    return out, early, wall, {k: v / n for k, v in host.items()}


def flush_times(flushes):
    """GPU time of each flush alone (median of 20, events)."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    res = {}
    for name, f in flushes.items():
        xs = []
        for _ in range(20):
            torch.cuda.synchronize()
            s.record()
            f()
            e.record()
            torch.cuda.synchronize()
            xs.append(s.elapsed_time(e))
        res[name] = statistics.median(xs)
    return res


def main():
    torch.zeros(1, device="cuda")
    hold = Hold()
    per_ms = cycles_per_ms()
    flushes = {
        "read 256 MiB": Flush("read", 256 * MIB),  # int32 summed into int64
        "none": Flush("none", 0),
        "read 64 MiB": Flush("read", 64 * MIB),
        "read 128 MiB": Flush("read", 128 * MIB),
        "read 1 GiB": Flush("read", 1024 * MIB),
        "zero 256 MiB": Flush("zero", 256 * MIB),
    }
    # The harness's ways of reading the buffer, and the one it picks.
    buf = torch.ones(256 * MIB // 4, dtype=torch.int32, device="cuda")
    for i, f in enumerate(flush_readers(torch, buf)):
        flushes[f"reader {i}"] = Flush(f, 0)
    flushes["harness's pick"] = Flush(fastest(torch, flush_readers(torch, buf)), 0)
    calls = {}
    for c in ("mm_small", "add_32m", "mm_large"):
        args = cases.inputs({"case": c, "device": "cuda"}, seed=1)
        calls[c] = (lambda a=args: kernel.kernel(*a))
    calls["empty region"] = lambda: None
    tiny = torch.zeros(1, device="cuda")
    calls["1-element add"] = lambda: tiny.add_(1)
    for f in calls.values():  # compile, autotune, clocks up
        for _ in range(20):
            f()
    torch.cuda.synchronize()
    rows = [(c, "hold", "read 256 MiB") for c in calls] + [("mm_small", "spin 0.2 ms", "read 256 MiB")]
    rows += [(c, "hold, no sync after flush", "harness's pick") for c in calls]
    rows += [(c, "hold", f) for c in ("mm_small", "add_32m") for f in ("none", "zero 256 MiB", "harness's pick")]
    res = {r: ([], 0, [], []) for r in rows}
    for rnd in range(3):  # interleaved rounds
        for r in rows:
            c, cover, f = r
            n = 60 if c == "mm_large" else 1500
            xs, early, wall, host = sample(calls[c], n, flushes[f], cover.split(",")[0], hold, per_ms,
                                           flush_sync="no sync" not in cover)
            xs0, early0, walls, hosts = res[r]
            res[r] = (xs0 + xs, early0 + early, walls + [wall], hosts + [host])
    print(f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}; spin calibration {per_ms:.0f} cycles/ms\n")
    print("GPU time of each flush alone (ms): " + ", ".join(f"{k} {v:.4f}" for k, v in flush_times(flushes).items() if k != "none"))
    print()
    print("| case | held back by | flush | median (ms) | q1 | q3 | started early / timed out | wall per sample (ms) | host ms per sample: " + " / ".join(PHASES) + " |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        xs, early, walls, hosts = res[r]
        xs = sorted(xs)
        n = len(xs)
        host = " / ".join(f"{statistics.mean(h[k] for h in hosts):.3f}" for k in PHASES)
        print(f"| {r[0]} | {r[1]} | {r[2]} | {statistics.median(xs):.5f} | {xs[n // 4]:.5f} | {xs[3 * n // 4]:.5f} "
              f"| {early}/{n} | {statistics.median(walls):.3f} | {host} |")


if __name__ == "__main__":
    main()
