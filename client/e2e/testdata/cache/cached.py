"""Vector addition that leaves a "compiled kernel" in TRITON_CACHE_DIR the
first time, as a compiler's cache would: written to a temporary file, then
renamed into place, so that two jobs at once never see half an entry."""

import os
import tempfile

import numpy as np


def make_inputs(params, seed):
    rng = np.random.default_rng(seed)
    n = params["N"]
    return rng.standard_normal(n), rng.standard_normal(n)


def reference(a, b):
    return a + b


def _compile():
    d = os.environ["TRITON_CACHE_DIR"]
    os.makedirs(d, exist_ok=True)
    entry = os.path.join(d, "vecadd.cubin")
    if not os.path.exists(entry):
        fd, tmp = tempfile.mkstemp(dir=d)
        with os.fdopen(fd, "wb") as f:
            f.write(b"\0" * 4096)
        os.replace(tmp, entry)


def cached(a, b):
    _compile()
    return a + b
