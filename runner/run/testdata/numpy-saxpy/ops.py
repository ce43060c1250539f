"""A vectorized and a looped saxpy, with work models (numpy only)."""
import numpy as np


def make_inputs(params, seed):
    rng = np.random.default_rng(seed)
    n = int(params["n"])
    return {"a": float(params["a"]), "x": rng.standard_normal(n), "y": rng.standard_normal(n)}


def saxpy_reference(a, x, y):
    return a * x + y


def saxpy_vectorized(a, x, y, chunk=None):
    return a * x + y


def saxpy_loop(a, x, y):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = a * x[i] + y[i]
    return out


def flops(params):
    return 2.0 * params["n"]


def bytes_moved(params, impl):
    # A fused kernel reads x and y and writes out: 3 float64 arrays.
    return 24.0 * params["n"]


def metrics(params, impl_params):
    return {"chunks": params["n"] / impl_params.get("chunk", params["n"])}
