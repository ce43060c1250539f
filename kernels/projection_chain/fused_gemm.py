"""Fused-GEMM projection chain: one wide GEMM, then the activations on views.

    Z = x W^T                          [B, T, 4d+H], W = [W_q; W_k; W_v; W_g; W_a]
    q = SiLU(Z[..., 0:d])    k = SiLU(Z[..., d:2d])    v = Z[..., 2d:3d]
    g = Z[..., 3d:4d]        a = logsigmoid(Z[..., 4d:])

x is read once instead of five times, and one GEMM with N = 4d+H replaces
five narrower ones; the three activations remain separate kernels, so
q, k, a still make a round trip through HBM (see inputs.traffic). This is
the seed's "Fused (1 GEMM + activations)". Reference:
reference.projection_chain.
"""

import torch
import torch.nn.functional as F

from projection_chain.reference import split


def chain(x, w):
    """(q, k, v, g, a) from one GEMM over the concatenated W [4d+H, d]."""
    d = x.shape[-1]
    z = F.linear(x, w)
    q = F.silu(z[..., :d])
    k = F.silu(z[..., d:2 * d])
    a = F.logsigmoid(z[..., 4 * d:])
    return q, k, z[..., 2 * d:3 * d], z[..., 3 * d:4 * d], a


def forward(x, w):
    """Forward pass: x [B,T,d], W [4d+H, d] -> (q, k, v, g [B,T,d], a [B,T,H])."""
    return chain(x, w)


def forward_backward(x, w, dq, dk, dv, dg, da):
    """Forward and backward through autograd with one concatenated weight leaf.

    Autograd's slice backward scatters each output's gradient into a full
    [B, T, 4d+H] buffer before the two backward GEMMs; that is part of what
    this variant measures. Returns (dx, dW_q, dW_k, dW_v, dW_g, dW_a).
    """
    xl = x.detach().requires_grad_()
    wl = w.detach().requires_grad_()
    torch.autograd.backward(chain(xl, wl), (dq, dk, dv, dg, da))
    return (xl.grad, *split(wl.grad, x.shape[-1]))
