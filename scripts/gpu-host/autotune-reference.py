#!/usr/bin/env python3
"""Times the config xrun's autotuned-matmul run chose, outside xrun, for the
benchmark in docs/performance.md ("Autotuned kernels"):

  --ncu:      runs the chosen Triton config (or cuBLAS) CALLS times between
              cudaProfilerStart and cudaProfilerStop, for
              `ncu --profile-from-start off --clock-control none`;
  --do-bench: prints triton.testing.do_bench's median of the chosen config
              and of cuBLAS at each N, as JSON lines.

The config comes from a results.json of the experiment (the triton
implementation's autotune record at that N), so that what is timed is
exactly what xrun timed. Usage (from the repository root):

  ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum --csv \\
      python3 scripts/gpu-host/autotune-reference.py --ncu RESULTS 8192 triton
  python3 scripts/gpu-host/autotune-reference.py --do-bench RESULTS 2048 4096 8192
"""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "kernels"))

CALLS = 10


def chosen(results, n):
    """The kernel keyword arguments of the config the run chose at N = n."""
    with open(results) as f:
        r = json.load(f)
    for c in r["cases"]:
        if int(c["params"]["N"]) == n:
            (a,) = c["results"]["triton"]["autotune"]
            return {k: v for k, v in a["params"].items() if v is not None}, a["config"]
    raise SystemExit("no case N=%d in %s" % (n, results))


def calls(n, impl, results):
    import torch
    import triton
    from autotuned_matmul import cublas, inputs, triton_matmul
    a, b = inputs.make_inputs({"N": n, "device": "cuda", "dtype": "float16"}, 1)
    if impl == "cublas":
        return (lambda: cublas.matmul(a, b)), "cublas"
    kw, label = chosen(results, n)
    c = torch.empty_like(a)
    grid = (triton.cdiv(n, kw["BLOCK_M"]) * triton.cdiv(n, kw["BLOCK_N"]),)

    def call():
        triton_matmul.matmul_kernel.fn[grid](a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                             c.stride(0), c.stride(1), **kw)
    return call, label


def main():
    mode, results = sys.argv[1], sys.argv[2]
    import torch
    if mode == "--ncu":
        n, impl = int(sys.argv[3]), sys.argv[4]
        call, label = calls(n, impl, results)
        call()
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        for _ in range(CALLS):
            call()
            torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        print(json.dumps({"n": n, "impl": impl, "config": label, "calls": CALLS}))
        return
    import triton
    for n in map(int, sys.argv[3:]):
        for impl in ("triton", "cublas"):
            call, label = calls(n, impl, results)
            ms = triton.testing.do_bench(call, warmup=100, rep=1000, return_mode="median")
            print(json.dumps({"n": n, "impl": impl, "config": label, "do_bench_median_ms": round(ms, 5)}), flush=True)


if __name__ == "__main__":
    main()
