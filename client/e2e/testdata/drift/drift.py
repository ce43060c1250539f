"""Calls whose speed the environment sets, for the regression test.

drift sleeps for 20 ms x DRIFT_SLOWDOWN (1.15: 15 % slower), steady for
20 ms whatever it says; both return 2x. A sleeping call leaves the CPU to
others and is woken first when its time is up, so a busy machine (the
test's, with other suites running) moves its median far less than it
would move a spinning one's; at 20 ms, the few tenths of a ms a loaded
machine takes to wake it are a small part of the time.
"""

import os
import time

import numpy as np


def make_inputs(params, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(params["N"]),)


def _wait(ms):
    time.sleep(ms / 1000)


def reference(x):
    return x * 2


def drift(x):
    _wait(20.0 * float(os.environ.get("DRIFT_SLOWDOWN", "1")))
    return x * 2


def steady(x):
    _wait(20.0)
    return x * 2
