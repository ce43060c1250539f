"""Standalone check of the fused dual GEMM, outside the runner.

    python3 experiments/dual-gemm-small-m/check.py

Everywhere: the unfused version against the float32 reference on a small
shape. With CUDA and Triton: every M of xrun.yaml and every tile shape,
each against the reference (max abs error; a NaN-filled block of the
output's size is freed just before the call, so an unwritten output shows),
then the median time (triton.testing.do_bench, L2 flushed between runs),
CTAs and waves. The runner's numbers are the ones that count.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels"))

import torch  # noqa: E402

from dual_gemm import inputs, reference, unfused  # noqa: E402

TILES = [(bm, bn) for bm in (64, 128) for bn in (64, 128, 256)]


def kernel_resources(jitfn):
    """(registers, spills, warps, stages, shared bytes) of each compiled variant of a @triton.jit function."""
    found = []
    for entry in getattr(jitfn, "device_caches", {}).values():
        for part in entry if isinstance(entry, tuple) else (entry,):
            if isinstance(part, dict):
                for k in part.values():
                    if hasattr(k, "n_regs"):
                        md = k.metadata
                        found.append("regs %s spills %s warps %s stages %s smem %s" % (
                            k.n_regs, k.n_spills, getattr(md, "num_warps", "?"), getattr(md, "num_stages", "?"),
                            getattr(md, "shared", "?")))
    return found or ["compiled-kernel resources not found in this Triton version"]


def main():
    p = {"M": 40, "N": 256, "K": 512, "dtype": "bfloat16", "device": "cpu"}
    args = inputs.make_inputs(p, seed=1)
    err = (unfused.dual_gemm_swiglu(*args).float() - reference.dual_gemm_swiglu(*args)).abs().max().item()
    print("unfused vs reference on the CPU, M=40 N=256 K=512: max abs error %.2e" % err)
    assert err < 0.1
    if not torch.cuda.is_available():
        print("no CUDA: Triton kernel not checked")
        return
    import triton.testing
    from dual_gemm import triton_fused

    print(torch.cuda.get_device_name(0), "torch", torch.__version__, "triton", triton.__version__)
    impls = {"unfused": (unfused.dual_gemm_swiglu, {})}
    for bm, bn in TILES:
        impls["fused_m%d_n%d" % (bm, bn)] = (triton_fused.dual_gemm_swiglu, {"BLOCK_M": bm, "BLOCK_N": bn})
    table = []
    for M in (40, 64, 128, 248):
        p = {"M": M, "N": 4096, "K": 4096, "dtype": "bfloat16", "device": "cuda"}
        for seed, (name, (fn, kw)) in enumerate(impls.items()):
            args = inputs.make_inputs(p, seed=seed)
            ref = reference.dual_gemm_swiglu(*args)
            poison = torch.full((M, 4096), float("nan"), device="cuda", dtype=torch.bfloat16)
            del poison
            out = fn(*args, **kw)
            torch.cuda.synchronize()
            assert torch.isfinite(out).all(), "%s left NaN/Inf" % name
            err = (out.float() - ref).abs().max().item()
            ms = triton.testing.do_bench(lambda: fn(*args, **kw), warmup=50, rep=300, return_mode="median")
            m = inputs.metrics(p, kw)
            table.append((M, name, ms, err, m.get("ctas"), m.get("waves"),
                          inputs.flops(p) / ms * 1e-9, inputs.bytes(p, name) / ms * 1e-6))
            print("M=%d %-16s %.4f ms  max err %.2e  ctas %s" % (M, name, ms, err, m.get("ctas")), flush=True)
    print()
    print("| M | implementation | median ms | speedup vs unfused | CTAs | waves | TFLOPS | GB/s (model) | max err |")
    print("|---|---|---|---|---|---|---|---|---|")
    base = {r[0]: r[2] for r in table if r[1] == "unfused"}
    for M, name, ms, err, ctas, waves, tf, gbs in table:
        print("| %d | %s | %.4f | %.2fx | %s | %s | %.1f | %.0f | %.1e |" % (
            M, name, ms, base[M] / ms, "-" if ctas is None else "%d" % ctas,
            "-" if waves is None else "%.2f" % waves, tf, gbs, err))
    print()
    for line in kernel_resources(triton_fused._dual_gemm_swiglu):
        print("fused kernel", line)


if __name__ == "__main__":
    main()
