"""Inputs, reference and work models for the timing-validation cases.

Shapes per case (``params["case"]``):

* ``mm_small``: A [1536, 1536] bf16, B [1536, 1536] bf16 -> C = A @ B
* ``add_32m``:  x [32 Mi] fp32,  y [32 Mi] fp32          -> z = x + y
* ``mm_large``: A [8192, 24576] bf16, B [24576, 8192] bf16 -> C = A @ B

On a CPU run the sizes shrink (``params["scale"]`` divides every dimension)
so that the reference check stays quick.
"""

import torch

SHAPES = {
    "mm_small": ("mm", (1536, 1536, 1536)),
    "add_32m": ("add", (32 * 1024 * 1024,)),
    "mm_large": ("mm", (8192, 24576, 8192)),
}


def _dims(params):
    kind, dims = SHAPES[params["case"]]
    scale = int(params.get("scale", 1))
    return kind, tuple(max(16, d // scale) for d in dims)


def inputs(params, seed):
    """Fresh random inputs for one call, deterministic in ``seed``."""
    kind, dims = _dims(params)
    device = params["device"]
    g = torch.Generator(device="cpu").manual_seed(seed)
    if kind == "mm":
        m, k, n = dims
        dtype = torch.bfloat16 if device == "cuda" else torch.float32
        a = torch.randn(m, k, generator=g).to(device=device, dtype=dtype)
        b = torch.randn(k, n, generator=g).to(device=device, dtype=dtype)
        return (a, b)
    (n,) = dims
    x = torch.randn(n, generator=g).to(device)
    y = torch.randn(n, generator=g).to(device)
    return (x, y)


def reference(a, b):
    """C = A @ B (or x + y) computed in float32."""
    if a.dim() == 2:
        return (a.float() @ b.float()).to(a.dtype)
    return a + b


def flops(params):
    """2 M K N for a matmul, N for an add."""
    kind, dims = _dims(params)
    if kind == "mm":
        m, k, n = dims
        return 2.0 * m * k * n
    return float(dims[0])


def bytes_moved(params):
    """Each input read once and the output written once."""
    kind, dims = _dims(params)
    if kind == "mm":
        m, k, n = dims
        return 2.0 * (m * k + k * n + m * n)
    return 4.0 * 3 * dims[0]
