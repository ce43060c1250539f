"""Two CPU implementations of one matrix product, for the loaded-host demo.

C = A @ B with A: (M, K) and B: (K, N), float32, on NumPy (one BLAS
thread: the harness sets it). `control` is the library's product, the
run's baseline; `candidate` computes C a block of rows at a time, and,
when the environment sets DEMO_SLOWDOWN (a fraction, e.g. 0.2), computes
that fraction of its rows a second time: a code change that costs that
much more of the same work, so a busy host slows it as it slows the rest.
"""

import os

import numpy as np

_SLOWDOWN = float(os.environ.get("DEMO_SLOWDOWN") or 0)


def make_inputs(params, seed):
    m, k, n = params["M"], params["K"], params["N"]
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32)  # (M, K)
    b = rng.standard_normal((k, n), dtype=np.float32)  # (K, N)
    return a, b


def control(a, b):
    return a @ b


def candidate(a, b, block=64):
    m = a.shape[0]
    c = np.empty((m, b.shape[1]), dtype=a.dtype)
    for i in range(0, m, block):
        c[i : i + block] = a[i : i + block] @ b  # (block, K) @ (K, N)
    extra = int(round(_SLOWDOWN * m))
    if extra > 0:
        a[:extra] @ b  # the slowdown: the same work again, discarded
    return c


def flops(params):
    return 2.0 * params["M"] * params["N"] * params["K"]
