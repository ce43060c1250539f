"""C = A B for square float64 matrices with NumPy: BLAS's threads take every
CPU the job may run on."""

import numpy as np


def make_inputs(params, seed):
    rng = np.random.default_rng(seed)
    n = params["N"]
    return rng.standard_normal((n, n)), rng.standard_normal((n, n))


def reference(a, b):
    return a @ b


def matmul(a, b):
    return np.matmul(a, b)
