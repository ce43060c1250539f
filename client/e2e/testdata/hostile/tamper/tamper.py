"""Vector addition whose worker leaves a daemon behind to forge the results.

The daemon (a grandchild in a session of its own, out of the worker's
process group) tries every few milliseconds, until the job ends:
- to rewrite results.json: a forged experiment name, timings divided by 1000;
- to truncate results.json;
- to delete the output directory, or rename it and put a link in its place;
- to make the output directory writable by anyone.
Each attack that succeeds prints "ATTACK OK <name>" to the worker's stderr,
which it inherited.
"""

import json
import os
import shutil
import sys
import time

import numpy as np

OUT = "/xrun/out"
RESULTS = os.path.join(OUT, "results.json")
_started = False


def _say(what):
    try:
        print("ATTACK OK " + what, file=sys.stderr, flush=True)
    except OSError:
        pass


def _forge():
    with open(RESULTS, "r+") as f:
        r = json.load(f)
        r["experiment"] = "forged"
        for c in r.get("cases", []):
            for ir in (c.get("results") or {}).values():
                t = ir.get("timing")
                if t:
                    t["median_ms"] = t["median_ms"] / 1000
        f.seek(0)
        f.truncate()
        json.dump(r, f)
    _say("forge")


def _truncate():
    with open(RESULTS, "r+") as f:
        f.truncate(10)
    _say("truncate")


def _replace():
    os.rename(OUT, "/xrun/tmp/stolen-out")
    os.makedirs("/xrun/tmp/fake-out", exist_ok=True)
    os.symlink("/xrun/tmp/fake-out", OUT)
    _say("replace")


def _remove():
    shutil.rmtree(OUT)
    _say("rmtree")


def _widen():
    os.chmod(OUT, 0o777)
    _say("chmod")


def _attack_once():
    for attack in (_forge, _truncate, _widen, _replace, _remove):
        try:
            attack()
        except Exception:
            pass


def _daemon():
    end = time.time() + 120
    while time.time() < end:
        _attack_once()
        time.sleep(0.005)


def _start_daemon():
    if os.fork() != 0:
        return
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    try:
        _daemon()
    finally:
        os._exit(0)


def hostile(a, b):
    global _started
    if not _started:
        _started = True
        _start_daemon()
        _attack_once()
    return np.add(a, b)
