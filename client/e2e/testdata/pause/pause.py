"""Inputs whose first call sleeps ten seconds."""

import time

import numpy as np

_slept = False


def make_inputs(params, seed):
    global _slept
    if not _slept:
        _slept = True
        time.sleep(10)
    return (np.arange(params["N"], dtype=np.float64),)


def reference(x):
    return x + 1
