"""Vector addition whose "kernel" lives in TRITON_CACHE_DIR as a compiler's
would: built and written there (to a temporary file, renamed into place)
on the first call, loaded on later ones, and failing to load when the entry
is broken (JSONDecodeError, as Triton's metadata would)."""

import json
import os
import tempfile

import numpy as np


def make_inputs(params, seed):
    rng = np.random.default_rng(seed)
    n = params["N"]
    return rng.standard_normal(n), rng.standard_normal(n)


def reference(a, b):
    return a + b


def entry_path():
    return os.path.join(os.environ["TRITON_CACHE_DIR"], "vecadd", "kernel.json")


def _load():
    path = entry_path()
    if os.path.exists(path):
        with open(path) as f:
            meta = json.load(f)
        if meta.get("op") != "add":
            raise RuntimeError("kernel entry %s is for %r" % (path, meta.get("op")))
        print("kernel: loaded from the cache", flush=True)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
    with os.fdopen(fd, "w") as f:
        json.dump({"op": "add", "pad": "x" * 4000}, f)
    os.replace(tmp, path)
    print("kernel: built", flush=True)


_loaded = []


def cached(a, b):
    if not _loaded:
        _load()
        _loaded.append(True)
    return a + b


def broken(a, b):
    _load()
    raise ValueError("broken: its own bug")
