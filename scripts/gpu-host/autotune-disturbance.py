#!/usr/bin/env python3
"""Which conditions change the config Triton's autotuner picks?

Runs the autotuned matmul of kernels/autotuned_matmul on a bare GPU (no
Docker, no xrun) under conditions a worker of the runner may tune in, each
in a fresh process (the autotuner keeps its choices in memory, and its disk
cache is off here), and prints the config it chose with every config's
median as the autotuner measured it:

  alone      a plain process, the GPU otherwise idle
  neighbour  another process on the same GPU doing what a second worker's
             correctness check does at the same time (its inputs, a float32
             reference product, cuBLAS fp16 products), all through the tuning
  partial    the same neighbour for the first PARTIAL_S of the first call
             alone (its set-up and the first configs' timing), as when
             another worker's check ends while the autotuner times
  profiler   CUPTI recording (torch's profiler) while the autotuner times
  forked     tuned in a child forked from a parent that imported torch and
             triton without touching the GPU (the zygote's way)

Then every config on its own, timed with triton.testing.do_bench on the idle
GPU, for the true ranking. Usage (from the repository root):

  python3 scripts/gpu-host/autotune-disturbance.py [--n 8192 4096] [--repeat 3] [--conditions alone partial] [--partial-s 1.0]
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "kernels"))


def label(cfg):
    kw = cfg.kwargs
    return "%dx%dx%d/w%d/s%d" % (kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], cfg.num_warps, cfg.num_stages)


def tune(n, condition):
    """In this process: tune at n under condition, print one JSON line."""
    import torch
    from autotuned_matmul import inputs, triton_matmul

    kernel = triton_matmul.matmul_kernel
    a, b = inputs.make_inputs({"N": n, "device": "cuda", "dtype": "float16"}, 1)
    torch.cuda.synchronize()
    go = os.environ.get("AUTOTUNE_GO")
    if go:
        open(go, "w").close()
    prof = None
    if condition == "profiler":
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
        prof.__enter__()
    t0 = time.perf_counter()
    triton_matmul.matmul(a, b)
    torch.cuda.synchronize()
    took = time.perf_counter() - t0
    if prof is not None:
        prof.__exit__(None, None, None)
    timings = {label(c): round(t[0] if isinstance(t, (list, tuple)) else t, 4)
               for c, t in getattr(kernel, "configs_timings", {}).items()}
    print(json.dumps({"n": n, "condition": condition, "chose": label(kernel.best_config),
                      "first_call_s": round(took, 2), "timings_ms": timings}), flush=True)


def neighbour(n, seconds, ready, go=None):
    """A second worker's check: inputs, float32 reference, fp16 products,
    for seconds from when go exists (from the start without one)."""
    import torch
    from autotuned_matmul import inputs
    a, b = inputs.make_inputs({"N": n, "device": "cuda", "dtype": "float16"}, 1)
    torch.cuda.synchronize()
    open(ready, "w").close()
    while go and not os.path.exists(go):
        time.sleep(0.001)
    end = time.time() + seconds
    seed = 2
    while time.time() < end:
        a, b = inputs.make_inputs({"N": n, "device": "cuda", "dtype": "float16"}, seed)
        ref = a.float() @ b.float()
        for _ in range(3):
            out = a @ b
        torch.cuda.synchronize()
        del a, b, ref, out
        seed += 1


def forked(n):
    import torch  # noqa: F401  imported before the fork, as the zygote does
    import triton  # noqa: F401
    pid = os.fork()
    if pid == 0:
        try:
            tune(n, "forked")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def child(args, *extra):
    env = dict(os.environ)
    return subprocess.Popen([sys.executable, os.path.abspath(__file__)] + list(extra), env=env)


def each_config(n):
    import torch
    import triton
    from autotuned_matmul import inputs, triton_matmul
    a, b = inputs.make_inputs({"N": n, "device": "cuda", "dtype": "float16"}, 1)
    c = torch.empty_like(a)
    out = {}
    for cfg in triton_matmul.CONFIGS:
        grid = (triton.cdiv(n, cfg.kwargs["BLOCK_M"]) * triton.cdiv(n, cfg.kwargs["BLOCK_N"]),)

        def call():
            triton_matmul.matmul_kernel.fn[grid](a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0),
                                                 b.stride(1), c.stride(0), c.stride(1), **cfg.all_kwargs())
        call()
        out[label(cfg)] = round(triton.testing.do_bench(call, warmup=100, rep=500, return_mode="median"), 4)
    print(json.dumps({"n": n, "condition": "each config alone (do_bench median)", "timings_ms": out}), flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--tune":
        n, condition = int(sys.argv[2]), sys.argv[3]
        return forked(n) if condition == "forked" else tune(n, condition)
    if len(sys.argv) > 1 and sys.argv[1] == "--neighbour":
        return neighbour(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else None)
    if len(sys.argv) > 1 and sys.argv[1] == "--each":
        return each_config(int(sys.argv[2]))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[8192, 4096])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--conditions", nargs="+", default=["alone", "neighbour", "partial", "profiler", "forked"])
    p.add_argument("--partial-s", type=float, default=1.0)
    a = p.parse_args()
    os.environ.setdefault("TRITON_CACHE_DIR", "/tmp/autotune-disturbance-cache")
    os.environ["TRITON_CACHE_AUTOTUNING"] = "0"
    for n in a.n:
        subprocess.run([sys.executable, __file__, "--each", str(n)], check=True)
        for _ in range(a.repeat):
            for condition in a.conditions:
                nb = None
                env = dict(os.environ)
                if condition in ("neighbour", "partial"):
                    ready, go = "/tmp/autotune-neighbour-ready", "/tmp/autotune-go"
                    for f in (ready, go):
                        if os.path.exists(f):
                            os.remove(f)
                    if condition == "neighbour":
                        nb = child(a, "--neighbour", str(n), "20", ready)
                    else:
                        nb = child(a, "--neighbour", str(n), str(a.partial_s), ready, go)
                        env["AUTOTUNE_GO"] = go
                    while not os.path.exists(ready):
                        time.sleep(0.05)
                subprocess.run([sys.executable, __file__, "--tune", str(n), condition], check=True, env=env)
                if nb is not None:
                    nb.kill()
                    nb.wait()


if __name__ == "__main__":
    main()
