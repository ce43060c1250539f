"""Inputs and work models for the chunkwise GLA intra-chunk forward.

Shapes (B batch, H heads, T steps, C chunk, N = T / C chunks, d key dim,
dv value dim):

    q : [B, H, T, d]   queries, ``dtype``
    k : [B, H, T, d]   keys, ``dtype``
    v : [B, H, T, dv]  values, ``dtype``
    g : [B, H, N, C]   log forget gates (<= 0), float32, laid out by chunk

The chunk size is carried by ``g``'s last dimension, so the four tensors
alone define a call and every implementation reads ``C`` from them.

Scales: q and k are N(0, 1/d) so that q.k is N(0, 1/d); v is N(0, 1);
g = logsigmoid(x + 3) with x ~ N(0, 1), a mean gate of about exp(-0.07),
so the decay reaches across a few dozen steps and chunks of 256 see it
fade to nothing. The outputs are then of order one (std about 0.35, max
about 2.5).

Operand dtype: float16 by default, as on the seed's T4 (Turing has no bf16
tensor cores). The kernels round P = S * D to the operand dtype for the
second GEMM; with bf16 (8 significant bits) that rounding alone puts the max
absolute error near 1e-2 at these output sizes (seen on an H100: up to
1.05e-2); float16 (11 significant bits) rounds eight times finer, so the
seed's bound of 1e-2 separates a correct kernel from a wrong one.
"""

import torch
import torch.nn.functional as F


def _dims(params):
    B, H, T = int(params["B"]), int(params["H"]), int(params["T"])
    d, dv, C = int(params["d"]), int(params["dv"]), int(params["chunk"])
    if T % C != 0:
        raise ValueError("T=%d is not a multiple of chunk=%d; choose T as a multiple of the chunk size" % (T, C))
    return B, H, T, d, dv, C


def make_inputs(params, seed):
    """Fresh (q, k, v, g) on ``params["device"]``, deterministic in ``seed``."""
    B, H, T, d, dv, C = _dims(params)
    device = torch.device(params.get("device", "cpu"))
    dtype = getattr(torch, str(params.get("dtype", "float16")))
    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed))

    def randn(*shape):
        return torch.randn(*shape, generator=gen, device=device, dtype=torch.float32)

    q = (randn(B, H, T, d) * d ** -0.5).to(dtype)
    k = (randn(B, H, T, d) * d ** -0.5).to(dtype)
    v = randn(B, H, T, dv).to(dtype)
    g = F.logsigmoid(randn(B, H, T // C, C) + 3.0)
    return q, k, v, g


def flops(params):
    """The seed's FLOP model: per chunk, the two dense C x C products.

    S = Q K^T costs 2 C^2 d and O = (S * D) V costs 2 C^2 dv, over N = T / C
    chunks and B H heads: 2 B H T C (d + dv). It counts the masked upper
    triangle, as the seed's TFLOPS figures do (they equal this model
    exactly), so TFLOPS here compare with the seed's one for one.
    """
    B, H, T, d, dv, C = _dims(params)
    return 2.0 * B * H * T * C * (d + dv)


def bytes(params):
    """Fewest bytes through device memory: q, k, v and g read once, o written once (float32)."""
    B, H, T, d, dv, C = _dims(params)
    es = torch.empty((), dtype=getattr(torch, str(params.get("dtype", "float16")))).element_size()
    return float(B * H * T * ((2 * d + dv) * es + 4 + 4 * dv))


def tokens(params):
    """Tokens per call: B T."""
    B, H, T, d, dv, C = _dims(params)
    return float(B * T)
