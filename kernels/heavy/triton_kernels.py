"""The autotuned Triton kernels: the tile-autotuned GEMM
(autotuned_matmul.triton_matmul) and attention (triton_attention).

HEAVY_SLOWDOWN (a factor, 1 by default) makes every call do that much of
its work: 1.1 has each program take 10 % more steps along K (the GEMM) or
the keys (attention), on masked loads that read nothing, so that the
kernel runs about 10 % longer at every size and computes the same result.
It is how a nightly's regression is injected in the benchmark of
docs/regressions.md (xrun submit --env HEAVY_SLOWDOWN=1.1), not part of
either kernel's method.
"""

import os

from autotuned_matmul import triton_matmul

from . import triton_attention


def extra_pct():
    """HEAVY_SLOWDOWN as the kernels' extra_pct: 1.1 is 10."""
    return max(0, int(round((float(os.environ.get("HEAVY_SLOWDOWN", "1") or 1) - 1) * 100)))


def run(*args):
    if len(args) == 2:
        return triton_matmul.matmul(*args, extra_pct=extra_pct())
    return triton_attention.attention(*args, extra_pct=extra_pct())
