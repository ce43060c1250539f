"""What the hostile experiments share: vector addition, done honestly."""

import numpy as np


def make_inputs(params, seed):
    rng = np.random.default_rng(seed)
    n = params["N"]
    return rng.standard_normal(n), rng.standard_normal(n)


def reference(a, b):
    return a + b


def honest(a, b):
    return np.add(a, b)
