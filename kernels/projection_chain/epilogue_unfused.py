"""Unfused output epilogue: RMSNorm, SiLU, multiply and the output GEMM.

    n = RMSNorm_head(o) * w_norm      o [B,T,d] viewed as [B,T,H,d/H]
    s = SiLU(g)                       g [B,T,d]
    y = (n * s) W_o^T                 W_o [d,d]

Each step is its own kernel (RMSNorm is one kernel where PyTorch has
F.rms_norm, torch >= 2.4; before that it is written out in elementwise ops),
so n and s make a round trip through HBM. Reference: reference.epilogue.
"""

import torch
import torch.nn.functional as F

from projection_chain.reference import EPS


def rmsnorm(o, w_norm):
    """Per-head RMSNorm of o [B,T,d] with the shared weight w_norm [d/H]."""
    shape, dh = o.shape, w_norm.numel()
    oh = o.reshape(*shape[:-1], shape[-1] // dh, dh)
    if hasattr(F, "rms_norm"):
        return F.rms_norm(oh, (dh,), w_norm, EPS).reshape(shape)
    of = oh.float()
    n = of * torch.rsqrt(of.pow(2).mean(-1, keepdim=True) + EPS)
    return (n.to(o.dtype) * w_norm).reshape(shape)


def chain(o, g, w_norm, w_o):
    """y [B,T,d] = (RMSNorm_head(o) * w_norm * SiLU(g)) W_o^T, op by op."""
    return F.linear(rmsnorm(o, w_norm) * F.silu(g), w_o)


def forward(o, g, w_norm, w_o):
    """Forward pass of the epilogue chain."""
    return chain(o, g, w_norm, w_o)
