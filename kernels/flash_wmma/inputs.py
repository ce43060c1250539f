"""Inputs and work models for attention over [B, H, N, D].

    q, k, v ~ N(0, 1)  [B, H, N, D] in params["dtype"] (float16 on the GPU)
    causal             params["causal"], passed through as a Python bool

FLOPs: two matrix products of 2*N*N*D each per (batch, head), counting only
the (query, key) pairs the mask keeps: N*N pairs, or N*(N+1)/2 when causal.
Bytes: the least HBM traffic, Q, K, V read once and O written once,
4*B*H*N*D elements.
"""

import torch


def inputs(params, seed):
    """(q, k, v, causal) on params["device"]."""
    device = params.get("device", "cpu")
    dtype = getattr(torch, str(params.get("dtype", "float16")))
    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed))
    shape = (int(params["B"]), int(params["H"]), int(params["N"]), int(params["D"]))
    q, k, v = (torch.randn(shape, generator=gen, device=device, dtype=torch.float32).to(dtype)
               for _ in range(3))
    return q, k, v, bool(params.get("causal", False))


def _pairs(params):
    n = int(params["N"])
    return n * (n + 1) / 2 if params.get("causal", False) else float(n * n)


def flops(params):
    """4 * B * H * D * (kept query-key pairs)."""
    return 4.0 * int(params["B"]) * int(params["H"]) * int(params["D"]) * _pairs(params)


def bytes(params):
    """Q, K, V read and O written once: 4 * B*H*N*D elements."""
    size = torch.empty((), dtype=getattr(torch, str(params.get("dtype", "float16")))).element_size()
    return 4.0 * int(params["B"]) * int(params["H"]) * int(params["N"]) * int(params["D"]) * size


def tokens(params):
    """Query tokens per call: B * N."""
    return float(int(params["B"]) * int(params["N"]))
