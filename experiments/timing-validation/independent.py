"""Times the validation cases with tools independent of xrun.

    python3 independent.py dobench            # triton.testing.do_bench medians (ms), 3 rounds, JSON on stdout
    ncu --clock-control none --metrics gpu__time_duration.sum --csv \
        python3 independent.py ncu mm_small   # launches for Nsight Compute to time

Both use the same inputs and kernel functions as the xrun experiment
(kernels/timing), with an L2 flush before each timed call.
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels"))

from timing import cases, kernel  # noqa: E402

CASES = ["mm_small", "add_32m", "mm_large"]


def case_inputs(name):
    return cases.inputs({"case": name, "device": "cuda"}, seed=1)


def dobench(rounds=3):
    """Each case `rounds` times, interleaved; medians in ms, per case a list."""
    import triton.testing

    out = {name: [] for name in CASES}
    inputs = {name: case_inputs(name) for name in CASES}
    for _ in range(rounds):
        for name in CASES:
            a, b = inputs[name]
            fn = lambda: kernel.kernel(a, b)  # noqa: E731
            # warmup/rep are in milliseconds; do_bench flushes L2 between calls.
            out[name].append(triton.testing.do_bench(fn, warmup=200, rep=1000, return_mode="median"))
    print(json.dumps(out))


def ncu(name, reps=30):
    """Warm up, then `reps` flushed launches of one case; ncu keeps the last `reps`."""
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    a, b = case_inputs(name)
    for _ in range(5):
        kernel.kernel(a, b)
    torch.cuda.synchronize()
    for _ in range(reps):
        flush.zero_()
        torch.cuda.synchronize()
        kernel.kernel(a, b)
        torch.cuda.synchronize()


if __name__ == "__main__":
    if sys.argv[1] == "dobench":
        dobench()
    else:
        ncu(sys.argv[2])
