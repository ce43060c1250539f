"""Standalone check of the attention kernels on one GPU (outside the runner).

    python3 -m flash_wmma.check [--out DIR]     (with kernels/ on PYTHONPATH)

For each of the seed's five shapes: max |O - O_ref| against the float32
reference for SDPA, v1 and the v2 variants (fresh random inputs, two seeds),
NaN/Inf, and the median time of each through triton.testing.do_bench (L2
flushed between calls). Prints a table; with --out writes check.json there.
The runner's measurements (experiments/flash-attention-wmma) supersede these
rough numbers.
"""

import argparse
import json
import os
import sys

import torch

from flash_wmma import inputs as I
from flash_wmma import reference, sdpa

SHAPES = [(1, 8, 512, 64, False), (1, 8, 512, 64, True), (2, 8, 2048, 64, False),
          (2, 8, 2048, 64, True), (2, 8, 2048, 128, False)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    from triton.testing import do_bench

    impls = {"sdpa": sdpa.attention}
    errors = {}
    for mod_name in ("v1", "v2"):
        try:
            mod = __import__(f"flash_wmma.{mod_name}", fromlist=["attention"])
        except Exception as e:  # report a build failure and go on with the rest
            errors[mod_name] = repr(e)[-3000:]
            print(f"BUILD FAILED {mod_name}: {e}", file=sys.stderr)
            continue
        if mod_name == "v1":
            impls["v1"] = mod.attention
        else:
            impls["v2"] = mod.attention
            impls["v2_pad0"] = lambda q, k, v, c, f=mod.attention: f(q, k, v, c, stages=2, pad=0)
            impls["v2_1stage"] = lambda q, k, v, c, f=mod.attention: f(q, k, v, c, stages=1, pad=8)
    rows = []
    for b, h, n, d, causal in SHAPES:
        params = dict(B=b, H=h, N=n, D=d, causal=causal, dtype="float16", device="cuda")
        row = {"shape": f"({b},{h},{n},{d})", "causal": causal}
        for name, fn in impls.items():
            err, bad = 0.0, False
            try:
                for seed in (1, 2):
                    q, k, v, c = I.inputs(params, seed)
                    ref = reference.attention(q, k, v, c)
                    out = fn(q, k, v, c)
                    torch.cuda.synchronize()
                    bad |= not torch.isfinite(out).all().item()
                    err = max(err, (out.float() - ref).abs().max().item())
                q, k, v, c = I.inputs(params, 3)
                ms = do_bench(lambda: fn(q, k, v, c), warmup=50, rep=300, return_mode="median")
                row[name] = {"max_err": err, "nonfinite": bad, "us": ms * 1e3,
                             "tflops": I.flops(params) / (ms * 1e-3) / 1e12}
            except Exception as e:
                row[name] = {"error": repr(e)[-2000:]}
        rows.append(row)
    names = list(impls)
    print("shape            causal " + " ".join(f"{nm:>22}" for nm in names))
    for row in rows:
        cells = []
        for nm in names:
            r = row[nm]
            cells.append(f"{'ERR':>22}" if "error" in r else f"{r['us']:9.1f}us e={r['max_err']:.1e}{'!' if r['nonfinite'] else ''}")
        print(f"{row['shape']:16} {str(row['causal']):6} " + " ".join(f"{c:>22}" for c in cells))
    for row in rows:
        for nm in names:
            if "error" in row[nm]:
                print(row["shape"], row["causal"], nm, row[nm]["error"], file=sys.stderr)
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "rows": rows, "build_errors": errors}
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "check.json"), "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
