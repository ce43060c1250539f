"""Fixture kernels for the harness tests (numpy only)."""
import os
import signal
import sys
import time

import numpy as np


def make_inputs(params, seed):
    rng = np.random.default_rng(seed)
    n = int(params["n"])
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


def add(x, y):
    return x + y


def add_scaled(x, y, scale=1.0, block=1):
    return (x + y) * scale


def noisy_add(x, y):
    print("progress: adding", x.shape, flush=True)
    print("to stderr", file=sys.stderr, flush=True)
    return x + y


def wrong(x, y):
    return x - y


def zero_inputs(x, y):
    out = x + y
    x[:] = 0
    return out


_cache = {}


def replay(x, y):
    if "out" not in _cache:
        _cache["out"] = x + y
    return _cache["out"].copy()


def raises(x, y):
    raise ValueError("this kernel is broken")


def segfault(x, y):
    os.kill(os.getpid(), signal.SIGSEGV)


def hang(x, y):
    time.sleep(3600)


def wrong_shape(x, y):
    return (x + y)[:-1]


def wrong_dtype(x, y):
    return (x + y).astype(np.int64)


def half_precision(x, y):
    """Less precise than the float32 reference: checked at float16's tolerance."""
    return (x + y).astype(np.float16)


def nan_out(x, y):
    out = x + y
    out[0] = np.nan
    return out


def pair(x, y):
    return x + y, x * y


def flops(params):
    return float(params["n"])


def bytes_moved(params, impl):
    return 12.0 * params["n"] if impl != "fused" else 8.0 * params["n"]


def metrics(params, impl_params):
    return {"blocks": params["n"] / impl_params.get("block", 1)}


def make_typed(params, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(64) * 10).astype(params["dtype"])
    return x, x


def add_nudged(x, y):
    """x + y off by one part in 1e3: inside fp16 tolerance, outside fp32's."""
    out = x + y
    return (out * (1 + 1e-3)).astype(out.dtype) if out.dtype.kind == "f" else out
