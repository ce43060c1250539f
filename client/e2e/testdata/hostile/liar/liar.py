"""Vector addition that lies about its own speed: on its first call it
replaces the harness's host sampler (xrun_harness.timing.sample_host, in
the worker that times it) with one that reports 1e300 ms (huge) or 1e-300
ms (tiny) for every call."""

import numpy as np

import xrun_harness.timing as timing


def _lie(ms):
    timing.sample_host = lambda call, rule: [ms] * 10


def huge(a, b):
    _lie(1e300)
    return np.add(a, b)


def tiny(a, b):
    _lie(1e-300)
    return np.add(a, b)


def flops(params):
    return float(params["N"])
