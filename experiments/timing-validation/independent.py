"""Times the validation cases with tools independent of xrun.

    python3 independent.py dobench              # triton.testing.do_bench medians (ms), 3 rounds, JSON on stdout
    ncu --clock-control none --cache-control all --nvtx --metrics gpu__time_duration.sum --csv \\
        python3 independent.py ncu read [CASE,...]  # launches for Nsight Compute to time (all cases, or those named)

Both use the same inputs and kernel functions as the xrun experiment
(validation.py). For ncu, every case runs 60 times (mm_large 10), each
launch inside an NVTX range named k_<case>, after an L2 flush: "read"
reads a 256 MiB buffer, as the runner does (with --cache-control none, ncu
then sees the L2 in the runner's state), "zero" zeroes it, as do_bench
does.
"""

import json
import os
import sys
import time

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "..", "kernels"))

import validation  # noqa: E402

CASES = ["add_768k", "softmax_2048x1024", "mm_small", "softmax_8192x2048", "add_32m", "mm_large"]


def case_inputs(name):
    return validation.inputs({"case": name, "device": "cuda"}, seed=1)


def dobench(rounds=3):
    """Each case `rounds` times, interleaved; medians in ms, per case a list."""
    import triton.testing

    out = {name: [] for name in CASES}
    inputs = {name: case_inputs(name) for name in CASES}
    for _ in range(rounds):
        for name in CASES:
            args = inputs[name]
            fn = lambda: validation.kernel(*args)  # noqa: E731
            # warmup/rep are in milliseconds; do_bench flushes L2 between calls.
            out[name].append(triton.testing.do_bench(fn, warmup=200, rep=1000, return_mode="median"))
    print(json.dumps(out))


def ncu(flush_kind, cases=CASES):
    """Warm up, then flushed launches of every case, each in an NVTX range."""
    buf = torch.ones(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    total = torch.zeros((), dtype=torch.float32, device="cuda")
    flush = {"read": lambda: torch.sum(buf.view(torch.float32), 0, out=total), "zero": buf.zero_}[flush_kind]
    for name in cases:
        args = case_inputs(name)
        for _ in range(3):
            validation.kernel(*args)
        torch.cuda.synchronize()
        for _ in range(10 if name == "mm_large" else 60):
            flush()
            torch.cuda.synchronize()
            if name == "mm_large":
                time.sleep(0.003)  # a rest, as the runner's hold gives a power-limited kernel
            torch.cuda.nvtx.range_push("k_" + name)
            validation.kernel(*args)
            torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()
        del args


if __name__ == "__main__":
    if sys.argv[1] == "dobench":
        dobench()
    else:
        ncu(sys.argv[2], sys.argv[3].split(",") if len(sys.argv) > 3 else CASES)
