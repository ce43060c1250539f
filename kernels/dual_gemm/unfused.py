"""Unfused baseline: two library GEMMs, then the SwiGLU epilogue.

    X1 = A B1,  X2 = A B2   (torch.matmul: cuBLAS on a GPU)     [M, N] each
    H  = silu(X1) * X2      (two elementwise kernels)           [M, N]

Shapes: a [M, K], b1 [K, N], b2 [K, N], all in one dtype; H has that dtype.
A is read twice and the two [M, N] products make a round trip through
device memory; the fused kernel avoids both.
"""

import torch.nn.functional as F


def dual_gemm_swiglu(a, b1, b2):
    """silu(a @ b1) * (a @ b2) with two separate GEMMs, [M, N] in a's dtype."""
    return F.silu(a @ b1) * (a @ b2)
