"""c = a + b over vectors of length N."""

import numpy as np


def make_inputs(params, seed):
    rng = np.random.default_rng(seed)
    n = params["N"]
    return rng.standard_normal(n), rng.standard_normal(n)


def reference(a, b):
    return a + b


def chunked(a, b, chunk=1024):
    out = np.empty_like(a)
    for i in range(0, a.shape[0], chunk):
        out[i : i + chunk] = a[i : i + chunk] + b[i : i + chunk]
    return out
