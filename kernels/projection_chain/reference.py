"""Float32 reference of the projection chain, its backward pass, and the epilogue.

Every input is upcast to float32 and the math is written once, plainly; each
result is rounded once to the input dtype at the end (the runner compares
outputs of equal dtype), so the reference carries one rounding and no
intermediate ones:

    q = SiLU(x W_q^T), k = SiLU(x W_k^T), v = x W_v^T, g = x W_g^T,
    a = logsigmoid(x W_a^T)

The backward pass differentiates sum(dq*q + dk*k + dv*v + dg*g + da*a) with
respect to x and W, which is what autograd does given upstream gradients:

    dz_q = dq * SiLU'(z_q),  dz_k = dk * SiLU'(z_k),  dz_a = da * sigmoid(-z_a)
    dZ   = [dz_q | dz_k | dv | dg | dz_a]                  [M, 4d+H]
    dx   = dZ W,   dW = dZ^T x

with SiLU'(z) = sigmoid(z) * (1 + z * (1 - sigmoid(z))). The result is
returned as (dx, dW_q, dW_k, dW_v, dW_g, dW_a), the layout every
implementation returns.

The epilogue: y = (RMSNorm_head(o) * w_norm * SiLU(g)) W_o^T with eps 1e-6;
as in GLA, w_norm has one head's size d/H and is shared by the heads, so the
head count is d / w_norm.numel().
"""

import torch
import torch.nn.functional as F

EPS = 1e-6


def split(w, d):
    """Row blocks of W [4d+H, d]: W_q, W_k, W_v, W_g, W_a (views)."""
    return w[:d], w[d:2 * d], w[2 * d:3 * d], w[3 * d:4 * d], w[4 * d:]


def projection_chain(x, w):
    """(q, k, v, g, a) in x's dtype from x [B,T,d] and W [4d+H, d]."""
    dt = x.dtype
    x, w = x.float(), w.float()
    d = x.shape[-1]
    wq, wk, wv, wg, wa = split(w, d)
    zq, zk, za = x @ wq.t(), x @ wk.t(), x @ wa.t()
    q = zq * torch.sigmoid(zq)
    k = zk * torch.sigmoid(zk)
    a = F.logsigmoid(za)
    return tuple(t.to(dt) for t in (q, k, x @ wv.t(), x @ wg.t(), a))


def projection_chain_backward(x, w, dq, dk, dv, dg, da):
    """(dx, dW_q, dW_k, dW_v, dW_g, dW_a) in x's dtype, by the formulas above."""
    dt = x.dtype
    x, w = x.float(), w.float()
    d = x.shape[-1]
    wq, wk, _, _, wa = split(w, d)
    zq, zk, za = x @ wq.t(), x @ wk.t(), x @ wa.t()

    def dsilu(z):
        s = torch.sigmoid(z)
        return s * (1 + z * (1 - s))

    dz = torch.cat([dq.float() * dsilu(zq), dk.float() * dsilu(zk), dv.float(), dg.float(),
                    da.float() * torch.sigmoid(-za)], dim=-1)
    xm, dzm = x.reshape(-1, d), dz.reshape(-1, dz.shape[-1])
    dx = (dzm @ w).reshape(x.shape)
    dw = dzm.t() @ xm
    return tuple(t.to(dt) for t in (dx, *split(dw, d)))


def rmsnorm_heads(o, w_norm):
    """Per-head RMSNorm of o [B,T,d] times w_norm [d/H] (shared by the heads)."""
    shape, dh = o.shape, w_norm.numel()
    oh = o.reshape(*shape[:-1], shape[-1] // dh, dh)
    oh = oh * torch.rsqrt(oh.pow(2).mean(-1, keepdim=True) + EPS) * w_norm
    return oh.reshape(shape)


def epilogue(o, g, w_norm, w_o):
    """y [B,T,d] in o's dtype = (RMSNorm_head(o) * w_norm * SiLU(g)) W_o^T."""
    dt = o.dtype
    o, g, w_norm, w_o = o.float(), g.float(), w_norm.float(), w_o.float()
    return ((rmsnorm_heads(o, w_norm) * (g * torch.sigmoid(g))) @ w_o.t()).to(dt)
