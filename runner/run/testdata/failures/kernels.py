"""Implementations that fail in every way the runner must catch (numpy only)."""
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


def noisy_add(x, y):
    # Kernels may print; the protocol has its own descriptors.
    print('{"event":"samples","id":1,"samples_ms":[0]}')
    print("noisy_add on stderr", file=sys.stderr)
    return x + y


def wrong(x, y):
    return x - y


def zero_inputs(x, y):
    out = x + y
    x[:] = 0
    return out


_cache = {}


def replay(x, y):
    """Returns the first output it ever computed."""
    if "out" not in _cache:
        _cache["out"] = x + y
    return _cache["out"].copy()


def raises(x, y):
    raise RuntimeError("kernel launch failed: bad block size")


def segfault(x, y):
    os.kill(os.getpid(), signal.SIGSEGV)


def hang(x, y):
    time.sleep(3600)


def flops(params):
    return float(params["n"])


def segfault_if_small(x, y):
    """Crashes on small inputs only: the next case needs a fresh worker."""
    if x.shape[0] < 100:
        os.kill(os.getpid(), signal.SIGSEGV)
    return x + y


def sigkill(x, y):
    """Dies the way the kernel's out-of-memory killer kills."""
    os.kill(os.getpid(), signal.SIGKILL)


def memory_error(x, y):
    raise MemoryError("cannot allocate 1 TiB")
