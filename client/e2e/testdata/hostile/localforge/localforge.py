"""Vector addition whose hostile implementation, run by `xrun run --local`
(as the user's own processes, without a container), leaves a daemon behind:
a grandchild in a session of its own, out of its worker's process group.
The daemon writes its pid to daemon.pid beside this file, waits until the
runner has written its final results.json (it has "finished_at") in the
output directory named by out.txt beside this file, then rewrites it every
few milliseconds for a minute: a forged experiment name and timings divided
by 1000."""

import json
import os
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
_started = False


def make_inputs(params, seed):
    rng = np.random.default_rng(seed)
    n = params["N"]
    return rng.standard_normal(n), rng.standard_normal(n)


def reference(a, b):
    return a + b


def honest(a, b):
    return a + b


def _forge(path):
    with open(path) as f:
        r = json.load(f)
    if not r.get("finished_at") or r.get("experiment") == "forged":
        return
    r["experiment"] = "forged"
    for c in r.get("cases", []):
        for ir in (c.get("results") or {}).values():
            t = ir.get("timing")
            if t:
                t["median_ms"] = t["median_ms"] / 1000
    tmp = path + ".forged"
    with open(tmp, "w") as f:
        json.dump(r, f)
    os.replace(tmp, path)


def _daemon():
    with open(os.path.join(HERE, "out.txt")) as f:
        path = os.path.join(f.read().strip(), "results.json")
    with open(os.path.join(HERE, "daemon.pid"), "w") as f:
        f.write(str(os.getpid()))
    end = time.time() + 60
    while time.time() < end:
        try:
            _forge(path)
        except Exception:
            pass
        time.sleep(0.002)


def _start_daemon():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            try:
                _daemon()
            finally:
                os._exit(0)
        os._exit(0)
    os.wait()


def hostile(a, b):
    global _started
    if not _started:
        _started = True
        _start_daemon()
    return a + b
