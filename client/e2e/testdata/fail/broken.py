"""An implementation that always raises."""

import numpy as np


def make_inputs(params, seed):
    return (np.arange(params["N"], dtype=np.float64),)


def reference(x):
    return x * 2


def broken(x):
    raise RuntimeError("this kernel is broken on purpose")
