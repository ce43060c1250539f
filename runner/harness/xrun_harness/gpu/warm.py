"""Warming the GPU before an autotuner times its configs (PROTOCOL.md,
"first"). A GPU idling at 345 MHz takes a while to reach its working
clocks; configs an autotuner times meanwhile read 1.2-1.6 times slower
than they run, in whatever order the clock rises, and the choice it
makes then is kept in the cache for every later run (seen on an H200).

The warm-up is a large fp16 matrix product in batches, timed with CUDA
events: once its time per call stops falling, the clocks are where a
heavy kernel keeps them.
"""

import time

# The warm-up product's size and the calls in one timed batch.
SIZE = 4096
BATCH = 4
# At least this long and this many batches, and steady when the last
# STEADY_BATCHES are within STEADY of each other and of the best before.
MIN_MS = 50.0
MIN_BATCHES = 5
STEADY_BATCHES = 3
STEADY = 0.01


def steady(per_call):
    """Whether the batches' times per call (ms, in order) have stopped
    falling: the last STEADY_BATCHES within STEADY of each other, and none
    of them faster than the best batch before them by more than STEADY."""
    if len(per_call) < max(MIN_BATCHES, STEADY_BATCHES + 1):
        return False
    last = per_call[-STEADY_BATCHES:]
    lo, hi = min(last), max(last)
    best_before = min(per_call[:-STEADY_BATCHES])
    return hi <= lo * (1 + STEADY) and lo >= best_before * (1 - STEADY)


def warm(torch, max_ms, clock=time.perf_counter):
    """Runs the warm-up product until steady() or max_ms have passed;
    returns (ms spent, time per call of the first batch, of the last)."""
    a = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16)
    b = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16)
    c = torch.empty(SIZE, SIZE, device="cuda", dtype=torch.float16)
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    per_call = []
    t0 = clock()
    # Untimed: the process's first product sets cuBLAS up (20-30 ms on an
    # H200), which is not the clock.
    torch.mm(a, b, out=c)
    torch.cuda.synchronize()
    try:
        while True:
            start.record()
            for _ in range(BATCH):
                torch.mm(a, b, out=c)
            end.record()
            end.synchronize()
            per_call.append(start.elapsed_time(end) / BATCH)
            el = (clock() - t0) * 1e3
            if el >= max_ms or (el >= MIN_MS and steady(per_call)):
                return el, per_call[0], per_call[-1]
    finally:
        del a, b, c
