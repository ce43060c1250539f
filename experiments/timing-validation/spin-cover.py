"""Is the slow mode of the 15 us matmul's samples the host's doing? Times
mm_small the runner's way (sync, zeroing flush, sync, spin kernel, events
around the call) with spin kernels of different lengths, interleaved: if the
host sometimes takes longer to enqueue the call than the spin lasts, the GPU
idles inside the timed region and a longer spin removes the slow samples.

    python3 spin-cover.py
"""

import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels"))

from timing import cases, kernel  # noqa: E402

COVERS_MS = [0.05, 0.2, 1.0]


def main():
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    a, b = cases.inputs({"case": "mm_small", "device": "cuda"}, seed=1)
    for _ in range(50):
        kernel.kernel(a, b)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    s.record()
    torch.cuda._sleep(1000000)
    e.record()
    torch.cuda.synchronize()
    per_ms = 1000000 / s.elapsed_time(e)
    res = {c: [] for c in COVERS_MS}
    for _ in range(5):
        for cover in COVERS_MS:
            for _ in range(1500):
                torch.cuda.synchronize()
                flush.zero_()
                torch.cuda.synchronize()
                torch.cuda._sleep(int(cover * per_ms))
                s.record()
                kernel.kernel(a, b)
                e.record()
                torch.cuda.synchronize()
                res[cover].append(s.elapsed_time(e))
    print("| spin (ms) | median (ms) | q1 | q3 | p90 | share > 1.1 x q1 |")
    print("|---|---|---|---|---|---|")
    for cover, xs in res.items():
        xs.sort()
        n = len(xs)
        q1 = xs[n // 4]
        slow = sum(1 for x in xs if x > 1.1 * q1) / n
        print(f"| {cover} | {statistics.median(xs):.5f} | {q1:.5f} | {xs[3 * n // 4]:.5f} | {xs[9 * n // 10]:.5f} | {100 * slow:.1f}% |")


if __name__ == "__main__":
    main()
