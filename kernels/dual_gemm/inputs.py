"""Inputs, work models and launch metrics for the dual GEMM with SwiGLU epilogue.

Shapes (M tokens, K model dim, N hidden dim):

    a  : [M, K]  activations, ``dtype`` (bf16)
    b1 : [K, N]  gate projection, ``dtype``
    b2 : [K, N]  up projection, ``dtype``

Scales: a is N(0, 1) and the weights N(0, 1/K), so both products are of
order one and the SwiGLU output too.
"""

import math

import torch


def _dims(params):
    return int(params["M"]), int(params["N"]), int(params["K"])


def _dtype(params):
    return getattr(torch, str(params.get("dtype", "bfloat16")))


def make_inputs(params, seed):
    """Fresh (a, b1, b2) on ``params["device"]``, deterministic in ``seed``."""
    M, N, K = _dims(params)
    device = torch.device(params.get("device", "cpu"))
    dtype = _dtype(params)
    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed))

    def randn(*shape):
        return torch.randn(*shape, generator=gen, device=device, dtype=torch.float32)

    a = randn(M, K).to(dtype)
    b1 = (randn(K, N) * K ** -0.5).to(dtype)
    b2 = (randn(K, N) * K ** -0.5).to(dtype)
    return a, b1, b2


def flops(params):
    """Two GEMMs of 2 M N K each; the epilogue's few operations per output are left out."""
    M, N, K = _dims(params)
    return 4.0 * M * N * K


def bytes(params, impl):
    """Bytes through device memory per call, by implementation.

    Fused: A, B1, B2 read once, H written once: (M K + 2 K N + M N) elements.
    Unfused: each GEMM reads A and its weight and writes its [M, N] product;
    the epilogue reads both products and writes H: (2 M K + 2 K N + 5 M N).
    The reference is counted like the unfused version (it is one too, in float32).
    """
    M, N, K = _dims(params)
    es = torch.empty((), dtype=_dtype(params)).element_size()
    if impl.startswith("fused"):
        return float((M * K + 2 * K * N + M * N) * es)
    return float((2 * M * K + 2 * K * N + 5 * M * N) * es)


def metrics(params, impl_params):
    """CTAs launched (for a tiled implementation) against the GPU's SMs.

    ``ctas`` = ceil(M / BLOCK_M) ceil(N / BLOCK_N); ``sms`` is the SM count of
    CUDA device 0 and ``waves`` = ctas / sms, present only where CUDA is.
    """
    M, N, K = _dims(params)
    out = {}
    if "BLOCK_M" in impl_params and "BLOCK_N" in impl_params:
        out["ctas"] = float(math.ceil(M / int(impl_params["BLOCK_M"])) * math.ceil(N / int(impl_params["BLOCK_N"])))
        out["m_tiles"] = float(math.ceil(M / int(impl_params["BLOCK_M"])))
        out["m_tile_fill"] = M / (out["m_tiles"] * int(impl_params["BLOCK_M"]))
    if torch.cuda.is_available():
        out["sms"] = float(torch.cuda.get_device_properties(0).multi_processor_count)
        if "ctas" in out:
            out["waves"] = out["ctas"] / out["sms"]
    return out
