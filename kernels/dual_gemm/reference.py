"""PyTorch reference: dual GEMM with a SwiGLU epilogue.

    H = silu(A B1) * (A B2),   silu(x) = x sigmoid(x)

Shapes: a [M, K], b1 [K, N], b2 [K, N]; returns H [M, N] in float32,
computed in float32 from the given operands (torch 1.13 operations only).
"""

import torch


def dual_gemm_swiglu(a, b1, b2):
    """silu(a @ b1) * (a @ b2) in float32, [M, N]."""
    af = a.float()
    x1 = af @ b1.float()
    x2 = af @ b2.float()
    return x1 * torch.sigmoid(x1) * x2
