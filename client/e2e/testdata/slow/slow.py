"""Inputs that take five minutes to make."""

import sys
import time

import numpy as np


def make_inputs(params, seed):
    print("making inputs slowly", file=sys.stderr, flush=True)
    time.sleep(300)
    return (np.zeros(params["N"]),)


def reference(x):
    return x
