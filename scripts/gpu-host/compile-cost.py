#!/usr/bin/env python3
"""Where the first call of a torch.compile implementation spends its time,
on the GPU of this machine (no Docker, no runner): the 058 backward
experiment's `compiled` implementation (projection_chain.compiled), called
on one case the way a worker's check first calls it, with the compile
caches in CACHE (as xrun's volume would hold them) and AOTAutograd's cache
off, as xrun's workers run.

    python3 scripts/gpu-host/compile-cost.py CACHE [--profile OUT.txt] [--top N]

Run it from the repository root, twice or more with the same CACHE: the
first run fills the caches, the later ones are warm reruns. Prints one JSON
line: the seconds `import torch` took, the seconds the compile stack's
imports took (torch._dynamo, torch._inductor), the first call (the compile)
and the second (the kernels alone); --profile writes cProfile's functions
of the first call, by cumulative time.
"""

import argparse
import json
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cache")
    ap.add_argument("--profile")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--case", default='{"B": 4, "T": 512, "d": 2048, "H": 16, "dtype": "bfloat16"}')
    a = ap.parse_args()

    cache = os.path.abspath(a.cache)
    for var, sub in (("TRITON_CACHE_DIR", "triton"), ("TORCHINDUCTOR_CACHE_DIR", "inductor")):
        os.environ[var] = os.path.join(cache, sub)
    os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "0")
    sys.path.insert(0, os.path.abspath("kernels"))

    out = {}
    t = time.perf_counter()
    import torch
    out["import_torch_s"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    import torch._dynamo  # noqa: F401
    import torch._inductor.compile_fx  # noqa: F401
    out["import_compile_stack_s"] = round(time.perf_counter() - t, 3)

    from projection_chain import compiled, inputs

    params = json.loads(a.case)
    params["device"] = "cuda"
    args = inputs.inputs_backward(params, 1)
    torch.cuda.synchronize()

    prof = None
    if a.profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    t = time.perf_counter()
    compiled.forward_backward(*args)
    torch.cuda.synchronize()
    out["first_call_s"] = round(time.perf_counter() - t, 3)
    if prof is not None:
        prof.disable()
        import pstats
        with open(a.profile, "w") as f:
            pstats.Stats(prof, stream=f).sort_stats("cumulative").print_stats(a.top)
    t = time.perf_counter()
    compiled.forward_backward(*args)
    torch.cuda.synchronize()
    out["second_call_s"] = round(time.perf_counter() - t, 3)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
