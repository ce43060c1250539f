"""Unfused projection chain: five GEMMs and three activation kernels.

This is how the chain runs layer by layer in eager PyTorch (fla-org's GLA
layer has one nn.Linear per projection):

    z_q = x W_q^T   z_k = x W_k^T   v = x W_v^T   g = x W_g^T   z_a = x W_a^T
    q = SiLU(z_q)   k = SiLU(z_k)   a = logsigmoid(z_a)

Eight launches; x [B,T,d] is read by each of the five GEMMs and every
pre-activation z makes a round trip through HBM. The weights are row blocks
of one W [4d+H, d] (contiguous views), the same numbers a model with five
separate nn.Linear weights holds. Reference: reference.projection_chain.
"""

import torch
import torch.nn.functional as F

from projection_chain.reference import split


def chain(x, wq, wk, wv, wg, wa):
    """(q, k, v, g, a) from x and the five weight blocks, one op per kernel."""
    q = F.silu(F.linear(x, wq))
    k = F.silu(F.linear(x, wk))
    v = F.linear(x, wv)
    g = F.linear(x, wg)
    a = F.logsigmoid(F.linear(x, wa))
    return q, k, v, g, a


def forward(x, w):
    """Forward pass: x [B,T,d], W [4d+H, d] -> (q, k, v, g [B,T,d], a [B,T,H])."""
    return chain(x, *split(w, x.shape[-1]))


def forward_backward(x, w, dq, dk, dv, dg, da):
    """Forward and backward through autograd with five separate weight leaves.

    Returns (dx [B,T,d], dW_q, dW_k, dW_v, dW_g [d,d], dW_a [H,d]).
    """
    xl = x.detach().requires_grad_()
    ws = [p.detach().requires_grad_() for p in split(w, x.shape[-1])]
    torch.autograd.backward(chain(xl, *ws), (dq, dk, dv, dg, da))
    return (xl.grad, *[p.grad for p in ws])
