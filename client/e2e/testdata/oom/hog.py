"""An implementation that touches 2 GiB."""

import numpy as np


def make_inputs(params, seed):
    return (np.ones(params["N"]),)


def reference(x):
    return x


def hog(x):
    big = np.ones(2 << 30 >> 3)  # 2 GiB of float64, every page written
    return x + big[: x.shape[0]] - 1
