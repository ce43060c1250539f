"""Standalone check of the GLA kernels, outside the runner.

    python3 experiments/039-gla-pingpong/check.py [--quick]

Everywhere: the chunkwise reference against the step-by-step recurrence on
small shapes (both in float32). With CUDA and Triton: every sweep point of xrun.yaml,
each Triton kernel against the reference (max abs error, every output
written: a NaN-filled block of the output's size is freed just before the
call, so the caching allocator hands it to the output), then the median time of each (triton.testing.do_bench, L2 flushed
between runs) and the seed's table. The runner's numbers are the ones that
count; this is a quick look.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels"))

import torch  # noqa: E402

from gla import inputs, reference  # noqa: E402

PARAMS = {"B": 4, "H": 32, "d": 64, "dv": 64, "dtype": "float16"}
SWEEP = [(64, T) for T in (256, 512, 1024, 2048)] + [(256, T) for T in (1024, 2048, 4096)]


def check_reference():
    for C, T in ((8, 32), (16, 64), (32, 64)):
        p = {"B": 2, "H": 3, "d": 16, "dv": 8, "T": T, "chunk": C, "dtype": "float64", "device": "cpu"}
        args = inputs.make_inputs(p, seed=C + T)
        err = (reference.chunk_gla_intra(*args) - reference.recurrent_gla(*args)).abs().max().item()
        print("reference vs recurrence C=%d T=%d: max abs diff %.2e" % (C, T, err))
        assert err < 1e-5, "chunkwise reference disagrees with the recurrence"


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
    check_reference()
    if not torch.cuda.is_available():
        print("no CUDA: Triton kernels not checked")
        return
    import triton.testing
    from gla import triton_baseline, triton_pipelined

    impls = {
        "baseline": lambda *a: triton_baseline.chunk_gla_intra(*a, num_stages=1),
        "compiler_pipelined": lambda *a: triton_baseline.chunk_gla_intra(*a, num_stages=3),
        "pipelined": triton_pipelined.chunk_gla_intra,
    }
    sweep = SWEEP[:2] + SWEEP[4:5] if "--quick" in sys.argv else SWEEP
    print(torch.cuda.get_device_name(0), "torch", torch.__version__, "triton", triton.__version__)
    rows = []
    for C, T in sweep:
        p = dict(PARAMS, T=T, chunk=C, device="cuda")
        times = {}
        errs = {}
        for seed, name in enumerate(impls):
            args = inputs.make_inputs(p, seed=100 + seed)
            ref = reference.chunk_gla_intra(*args)
            poison = torch.full_like(ref, float("nan"))  # freed, its block is what the output reuses
            del poison
            out = impls[name](*args)
            torch.cuda.synchronize()
            assert torch.isfinite(out).all(), "%s wrote NaN/Inf or left outputs unwritten" % name
            errs[name] = (out - ref).abs().max().item()
            del ref
            times[name] = triton.testing.do_bench(lambda: impls[name](*args), warmup=50, rep=300, return_mode="median")
        args = inputs.make_inputs(p, seed=7)
        times["reference"] = triton.testing.do_bench(lambda: reference.chunk_gla_intra(*args), warmup=20, rep=200,
                                                     return_mode="median")
        rows.append((C, T, times, errs))
        print("C=%d T=%d " % (C, T) + " ".join("%s %.4f ms" % (n, t) for n, t in times.items())
              + " | max err " + " ".join("%s %.2e" % (n, e) for n, e in errs.items()), flush=True)

    print()
    print("| chunk | T | baseline ms | compiler_pipelined ms | pipelined ms | reference ms | speedup pipelined/baseline "
          "| speedup compiler/baseline | baseline tok/s | pipelined tok/s | baseline TFLOPS | pipelined TFLOPS | max err |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for C, T, t, e in rows:
        p = dict(PARAMS, T=T, chunk=C)
        fl, tok = inputs.flops(p), inputs.tokens(p)
        print("| %d | %d | %.4f | %.4f | %.4f | %.4f | %.3fx | %.3fx | %.3g | %.3g | %.2f | %.2f | %.1e |" % (
            C, T, t["baseline"], t["compiler_pipelined"], t["pipelined"], t["reference"],
            t["baseline"] / t["pipelined"], t["baseline"] / t["compiler_pipelined"],
            tok / t["baseline"] * 1e3, tok / t["pipelined"] * 1e3,
            fl / t["baseline"] * 1e-9, fl / t["pipelined"] * 1e-9, max(e.values())))
    print()
    for name, fn in (("baseline kernel", triton_baseline._gla_intra_fwd),
                     ("pipelined kernel", triton_pipelined._gla_intra_fwd_pipelined)):
        for line in kernel_resources(fn):
            print(name, line)


if __name__ == "__main__":
    main()
