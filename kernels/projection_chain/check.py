"""Standalone check of the projection and epilogue chains on one GPU.

    python3 -m projection_chain.check [--out DIR] [--compile-all]

For the scaling sweep (B=4, T=512..4096, d=2048, H=16) and the large case
(B=8, T=4096): max |out - ref| against the float32 reference and the median
time (triton.testing.do_bench, L2 flushed between calls) of every forward,
forward+backward and epilogue implementation, with the modelled HBM traffic
and the bandwidth it implies. torch.compile variants run at T=512 and the
large case only unless --compile-all (each shape compiles once). Prints a
table; with --out writes check.json there. The runner's measurements
(experiments/058-projection-chain-*) supersede these rough numbers.
"""

import argparse
import json
import os

import torch

from projection_chain import compiled, epilogue_fused, epilogue_unfused, fused_act, fused_gemm
from projection_chain import inputs as I
from projection_chain import reference as R
from projection_chain import unfused

CASES = [dict(B=4, T=t) for t in (512, 1024, 2048, 4096)] + [dict(B=8, T=4096)]


def max_err(out, ref):
    out = out if isinstance(out, (tuple, list)) else (out,)
    ref = ref if isinstance(ref, (tuple, list)) else (ref,)
    return max((o.float() - r).abs().max().item() for o, r in zip(out, ref))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="")
    ap.add_argument("--compile-all", action="store_true")
    args = ap.parse_args()
    from triton.testing import do_bench

    groups = {
        "forward": (I.inputs, R.projection_chain, I.traffic,
                    {"unfused": unfused.forward, "fused_gemm": fused_gemm.forward,
                     "fused_act": fused_act.forward, "compiled": compiled.forward}),
        "backward": (I.inputs_backward, R.projection_chain_backward, None,
                     {"unfused": unfused.forward_backward, "fused_gemm": fused_gemm.forward_backward,
                      "compiled": compiled.forward_backward}),
        "epilogue": (I.inputs_epilogue, R.epilogue, I.traffic_epilogue,
                     {"unfused": epilogue_unfused.forward, "fused": epilogue_fused.forward,
                      "compiled": compiled.epilogue}),
    }
    rows = []
    for group, (make, ref_fn, traffic, impls) in groups.items():
        for case in CASES:
            params = dict(case, d=2048, H=16, dtype="bfloat16", device="cuda")
            big = case["T"] == 512 or case["B"] == 8
            for name, fn in impls.items():
                if name == "compiled" and not (big or args.compile_all):
                    continue
                row = dict(group=group, impl=name, **case)
                try:
                    inp = make(params, 1)
                    row["max_err"] = max_err(fn(*inp), ref_fn(*inp))
                    del inp
                    inp = make(params, 2)
                    ms = do_bench(lambda args=inp: fn(*args), warmup=50, rep=200, return_mode="median")
                    row["ms"] = ms
                    if traffic is not None:
                        row["gb"] = traffic(params, name) / 1e9
                        row["ideal_gb"] = traffic(params, "ideal") / 1e9
                        row["gbps"] = row["gb"] / (ms * 1e-3)
                    del inp
                except Exception as e:
                    row["error"] = repr(e)[-1500:]
                rows.append(row)
                torch.cuda.empty_cache()
    print(f"{'group':9} {'impl':11} {'B':>2} {'T':>5} {'ms':>8} {'max_err':>8} {'GB':>6} {'GB/s':>6}")
    for r in rows:
        if "error" in r:
            print(f"{r['group']:9} {r['impl']:11} {r['B']:>2} {r['T']:>5} ERROR {r['error'][:300]}")
            continue
        print(f"{r['group']:9} {r['impl']:11} {r['B']:>2} {r['T']:>5} {r['ms']:8.3f} {r['max_err']:8.1e} "
              f"{r.get('gb', 0):6.3f} {r.get('gbps', 0):6.0f}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "check.json"), "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
