"""Inputs and work models of the projection and epilogue chains.

Shapes (M = B*T rows, H heads, d model width, s bytes per element):

    x        [B, T, d]        token activations
    W        [4d + H, d]      rows: W_q (d), W_k (d), W_v (d), W_g (d), W_a (H)
    dq ... da                 upstream gradients, shaped like q, k, v, g, a
    o        [B, T, d]        attention output entering the epilogue
    w_norm   [d/H]            RMSNorm weight, shared by the heads (as in GLA)
    W_o      [d, d]           output projection

Forward HBM traffic, the least each implementation must move, kernel by
kernel (one unit u = M*d*s; the weights w = (4d+H)*d*s are read once):

    unfused      5 GEMMs read x (5u) and write q,k,v,g (4u) + a (M*H*s);
                 SiLU(q), SiLU(k) read and write (4u); logsigmoid(a) (2*M*H*s)
                 = 13u + 3*M*H*s + w
    fused_gemm   one GEMM reads x (1u), writes [q|k|v|g|a] (4u + M*H*s);
                 the activations read and write q, k, a (4u + 2*M*H*s)
                 = 9u + 3*M*H*s + w
    fused_act    the same bytes as fused_gemm in 2 launches instead of 4
    compiled     Inductor keeps the GEMM in cuBLAS and fuses the pointwise
                 tail into one kernel: the same bytes as fused_gemm
    ideal        a GEMM applying the activations in its epilogue (CUTLASS EVT)
                 reads x once and writes each output once = 5u + M*H*s + w

At B=8, T=4096, d=2048, H=16 in bf16: unfused 1.782 GB, fused 1.245 GB, ideal
0.706 GB. The seed's 1.748 GB (unfused) and 0.672 GB (fused) are the unfused
and ideal lines without the weights term (0.034 GB).

Epilogue traffic (y = (RMSNorm(o) * w_norm * SiLU(g)) W_o^T; W_o is d*d*s):

    epilogue_unfused   norm (2u) + SiLU (2u) + multiply (3u) + GEMM (2u) = 9u + W_o
    epilogue_fused     norm*gate kernel (3u) + GEMM (2u)                 = 5u + W_o
    epilogue_compiled  Inductor fuses norm, SiLU and multiply: same as fused
    ideal              o, g read once, y written once                   = 3u + W_o
"""

import math

import torch


def _dtype(params):
    return getattr(torch, str(params.get("dtype", "bfloat16")))


def _randn(shape, gen, device, scale=1.0):
    return torch.randn(shape, generator=gen, device=device, dtype=torch.float32) * scale


def _generator(params, seed):
    device = params.get("device", "cpu")
    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed))
    return gen, device


def widths(params):
    """Returns (d, H, N) where N = 4d + H is the concatenated output width."""
    d, heads = int(params["d"]), int(params["H"])
    return d, heads, 4 * d + heads


def inputs(params, seed):
    """Forward inputs: (x [B,T,d], W [4d+H, d]) on params["device"]."""
    gen, device = _generator(params, seed)
    dt = _dtype(params)
    b, t = int(params["B"]), int(params["T"])
    d, _, n = widths(params)
    x = _randn((b, t, d), gen, device).to(dt)
    w = _randn((n, d), gen, device, 1.0 / math.sqrt(d)).to(dt)
    return x, w


def inputs_backward(params, seed):
    """Forward+backward inputs: (x, W, dq, dk, dv, dg, da).

    The upstream gradients are scaled by 1/sqrt(B*T) so that dW, a sum over
    B*T tokens, stays of order one and a single absolute tolerance fits dx
    and dW alike.
    """
    gen, device = _generator(params, seed)
    dt = _dtype(params)
    b, t = int(params["B"]), int(params["T"])
    d, heads, n = widths(params)
    x = _randn((b, t, d), gen, device).to(dt)
    w = _randn((n, d), gen, device, 1.0 / math.sqrt(d)).to(dt)
    scale = 1.0 / math.sqrt(b * t)
    grads = [_randn((b, t, d), gen, device, scale).to(dt) for _ in range(4)]
    grads.append(_randn((b, t, heads), gen, device, scale).to(dt))
    return (x, w, *grads)


def inputs_epilogue(params, seed):
    """Epilogue inputs: (o [B,T,d], g [B,T,d], w_norm [d/H], W_o [d,d])."""
    gen, device = _generator(params, seed)
    dt = _dtype(params)
    b, t = int(params["B"]), int(params["T"])
    d, heads, _ = widths(params)
    o = _randn((b, t, d), gen, device).to(dt)
    g = _randn((b, t, d), gen, device).to(dt)
    w_norm = (1.0 + _randn((d // heads,), gen, device, 0.1)).to(dt)
    w_o = _randn((d, d), gen, device, 1.0 / math.sqrt(d)).to(dt)
    return o, g, w_norm, w_o


def tokens(params):
    """Tokens per call: B*T."""
    return float(int(params["B"]) * int(params["T"]))


def flops(params):
    """Forward FLOPs: the GEMM x @ W^T, 2*M*d*(4d+H) (activations ignored)."""
    d, _, n = widths(params)
    return 2.0 * tokens(params) * d * n


def flops_backward(params):
    """Forward+backward FLOPs: the forward GEMM plus dx and dW, 3x forward."""
    return 3.0 * flops(params)


def flops_epilogue(params):
    """Epilogue FLOPs: the output GEMM, 2*M*d*d."""
    d = int(params["d"])
    return 2.0 * tokens(params) * d * d


def _size(params):
    # torch.dtype.itemsize is torch >= 2.1; element_size() works on 1.13 too.
    return torch.empty((), dtype=_dtype(params)).element_size()


def traffic(params, impl):
    """Forward HBM bytes of one implementation (see the module docstring)."""
    m, s = tokens(params), _size(params)
    d, heads, n = widths(params)
    unit, small, weights = m * d * s, m * heads * s, n * d * s
    if impl == "ideal":
        return 5 * unit + small + weights
    if impl in ("fused_gemm", "fused_act", "compiled"):
        return 9 * unit + 3 * small + weights
    return 13 * unit + 3 * small + weights


def bytes(params, impl):
    """Bytes model per implementation (forward projection chain)."""
    return traffic(params, impl)


def traffic_epilogue(params, impl):
    """Epilogue HBM bytes of one implementation (see the module docstring)."""
    m, s, d = tokens(params), _size(params), int(params["d"])
    unit, weights = m * d * s, d * d * s
    if impl == "ideal":
        return 3 * unit + weights
    if impl in ("epilogue_fused", "epilogue_compiled", "fused", "compiled"):
        return 5 * unit + weights
    return 9 * unit + weights


def bytes_epilogue(params, impl):
    """Bytes model per implementation (output epilogue chain)."""
    return traffic_epilogue(params, impl)
