"""Implementations whose exceptions are made to hurt whoever keeps their
messages: one of XRUN_SHOUT_MB MiB (default 60), which reached the runner's
log, results.json, the job store and the history whole, once a case; one
that retitles the terminal window, colours it and rings its bell."""

import os


def long(a, b):
    mb = int(os.environ.get("XRUN_SHOUT_MB") or "60")
    raise RuntimeError("A" * (mb << 20) + " END")


def escapes(a, b):
    raise RuntimeError("\x1b]0;pwned\x07\x1b[31mred\x1b[0m \x07bell\x1b[2K end")
