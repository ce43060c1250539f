"""Matrix multiply C = A @ B with A: (M, K) and B: (K, N).

`reference` is the library's matmul. `blocked` computes C one block of rows
at a time, the shape of a tiled kernel: replace it with your own kernel
(Triton, CUDA through torch, ...) and keep the same signature.

The functions take NumPy arrays on a CPU host and torch tensors on a GPU
host (params["device"] says which).
"""

import numpy as np


def make_inputs(params, seed):
    """Fresh inputs for one call, deterministic in seed."""
    m, k, n = params["M"], params["K"], params["N"]
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32)  # (M, K)
    b = rng.standard_normal((k, n), dtype=np.float32)  # (K, N)
    if params.get("device") == "cuda":
        import torch

        return torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    return a, b


def reference(a, b):
    return a @ b


def blocked(a, b, block=128):
    m, n = a.shape[0], b.shape[1]
    if hasattr(a, "new_empty"):  # torch
        c = a.new_empty((m, n))
    else:
        c = np.empty((m, n), dtype=a.dtype)
    for i in range(0, m, block):
        c[i : i + block] = a[i : i + block] @ b  # (block, K) @ (K, N)
    return c


def flops(params):
    return 2.0 * params["M"] * params["N"] * params["K"]
