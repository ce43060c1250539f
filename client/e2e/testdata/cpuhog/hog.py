"""Inputs that take a minute of every CPU the job may run on."""

import os
import subprocess
import sys
import time

SPIN = "import time\nt = time.time()\nwhile time.time() - t < 60:\n    pass\n"


def make_inputs(params, seed):
    # Twice as many spinners as the host has CPUs: whatever CPUs the job
    # is moved onto, all of them stay busy.
    procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(2 * (os.cpu_count() or 1))]
    for p in procs:
        p.wait()
    return (params["N"],)


def reference(n):
    return n
