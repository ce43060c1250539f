"""Where do the slow samples of the 15 us matmul come from? Times mm_small
the runner's way (sync, flush, sync, spin kernel, start event, call, end
event, sync) with spin kernels of different lengths, with and without the
zeroing flush, interleaved. For every sample it also asks, right after the
host has enqueued the call, whether the GPU had already passed the start
event: if so the GPU may have idled inside the timed region ("gap").

    python3 spin-cover.py

Two explanations predict different tables: host gaps (slow samples are the
gapped ones and vanish with a longer spin), or the flush's dirty L2 lines
draining into the kernel (slow samples shrink as the spin after the flush
grows, gaps or not).
"""

import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels"))

from timing import cases, kernel  # noqa: E402

COVERS_MS = [0.01, 0.05, 0.2, 1.0]


def cycles_per_ms():
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = 1e9
    for _ in range(5):
        torch.cuda.synchronize()
        s.record()
        torch.cuda._sleep(1000000)
        e.record()
        torch.cuda.synchronize()
        best = min(best, s.elapsed_time(e))
    return 1000000 / best


def main():
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    a, b = cases.inputs({"case": "mm_small", "device": "cuda"}, seed=1)
    torch.cuda.synchronize()
    for _ in range(3000):  # ~0.3 s of load: clocks up before calibrating the spin
        flush.zero_()
        kernel.kernel(a, b)
    per_ms = cycles_per_ms()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    keys = [(f, c) for f in (True, False) for c in COVERS_MS]
    res = {k: [] for k in keys}
    for _ in range(4):
        for f, cover in keys:
            for _ in range(800):
                torch.cuda.synchronize()
                if f:
                    flush.zero_()
                    torch.cuda.synchronize()
                torch.cuda._sleep(int(cover * per_ms))
                s.record()
                kernel.kernel(a, b)
                gap = s.query()
                e.record()
                torch.cuda.synchronize()
                res[(f, cover)].append((s.elapsed_time(e), gap))
    print(f"spin calibration: {per_ms:.0f} cycles/ms")
    print("| flush | spin (ms) | median (ms) | q1 | q3 | p90 | slow (> 1.1 x q1) | gapped | slow among gapped | slow among not gapped |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (f, cover), rows in res.items():
        xs = sorted(t for t, _ in rows)
        n = len(xs)
        q1 = xs[n // 4]
        slow = lambda rs: (sum(1 for t, _ in rs if t > 1.1 * q1) / len(rs)) if rs else float("nan")  # noqa: E731
        gapped = [r for r in rows if r[1]]
        clean = [r for r in rows if not r[1]]
        print(f"| {'zero 256 MiB' if f else 'none'} | {cover} | {statistics.median(xs):.5f} | {q1:.5f} | {xs[3 * n // 4]:.5f} "
              f"| {xs[9 * n // 10]:.5f} | {100 * slow(rows):.1f}% | {100 * len(gapped) / n:.1f}% | {100 * slow(gapped):.1f}% "
              f"| {100 * slow(clean):.1f}% |")


if __name__ == "__main__":
    main()
