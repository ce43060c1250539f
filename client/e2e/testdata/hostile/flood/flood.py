"""Vector addition whose worker floods every output it can reach, once:
- the runner's stdout and stderr (/proc/1/fd/1 and 2), past the worker's
  own bounded log, into the container's log;
- its own stdout;
- the event pipe, as log messages the runner writes to its log.
Each write that the kernel refuses is reported once on stderr."""

import json
import os
import sys

import numpy as np

_done = False
CHUNK = b"x" * 1023 + b"\n"


def _flood_path(path, mb):
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as e:
        print(f"flood: {path}: {e}", file=sys.stderr, flush=True)
        return
    try:
        for _ in range(mb * 1024):
            os.write(fd, CHUNK)
        print(f"FLOOD OK {path}", file=sys.stderr, flush=True)
    except OSError as e:
        print(f"flood: {path}: {e}", file=sys.stderr, flush=True)
    finally:
        os.close(fd)


def _flood_events(mb):
    fd = int(os.environ.get("XRUN_EVENT_FD", "4"))
    line = (json.dumps({"event": "log", "message": "y" * 1000}) + "\n").encode()
    try:
        for _ in range(mb * 1024):
            os.write(fd, line)
    except OSError as e:
        print(f"flood: event pipe: {e}", file=sys.stderr, flush=True)


def hostile(a, b):
    global _done
    if not _done:
        _done = True
        mb = int(os.environ.get("XRUN_FLOOD_MB") or "64")
        _flood_path("/proc/1/fd/1", mb)
        _flood_path("/proc/1/fd/2", mb)
        out = sys.stdout.buffer
        for _ in range(mb * 1024):
            out.write(CHUNK)
        out.flush()
        _flood_events(mb)
    return np.add(a, b)
