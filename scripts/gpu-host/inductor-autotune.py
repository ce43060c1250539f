#!/usr/bin/env python3
"""What the harness records of torch.compile's autotuning (xrun_harness.autotune):
compiles a small function with mode="max-autotune-no-cudagraphs" and prints
the records of its first call, as a first call in a worker would make them.

  python3 scripts/gpu-host/inductor-autotune.py
"""
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "runner", "harness"))

import torch  # noqa: E402

from xrun_harness import autotune  # noqa: E402


def f(x, w):
    return torch.nn.functional.gelu(x @ w).sum(dim=1)


def main():
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    g = torch.compile(f, mode="max-autotune-no-cudagraphs")  # imports torch._dynamo, as an experiment's would
    t0 = time.perf_counter()
    with autotune.recording() as rec:
        g(x, w)
        torch.cuda.synchronize()
    print(json.dumps({"first_call_s": round(time.perf_counter() - t0, 1), "autotune": rec.choices}))


if __name__ == "__main__":
    main()
