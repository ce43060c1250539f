"""The fused projection chain, slowed on demand, for the regression demo.

forward is projection_chain.fused_gemm.forward followed, when the
environment sets DEMO_SLOWDOWN_US, by torch.cuda._sleep: a kernel that
spins on the GPU for that many microseconds at DEMO_SM_MHZ (default
1980, an H100's clock), on the same stream, so both of the runner's
clocks (the CUDA events and CUPTI's kernel span) see it. It stands for a
kernel change that costs that much GPU time.
"""

import os

import torch

from projection_chain import fused_gemm

_US = float(os.environ.get("DEMO_SLOWDOWN_US") or 0)
_CYCLES = int(_US * float(os.environ.get("DEMO_SM_MHZ") or 1980))


def forward(x, w):
    out = fused_gemm.forward(x, w)
    if _CYCLES > 0:
        torch.cuda._sleep(_CYCLES)
    return out
