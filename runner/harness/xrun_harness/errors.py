"""Failures as the runner sees them: the stage that failed (`where`) and the
kind of error (PROTOCOL.md, "Errors")."""

import traceback

from .protocol import ErrorEvent


class StageError(Exception):
    """An exception raised by experiment code, tagged with where it happened."""

    def __init__(self, where, exc):
        super().__init__(str(exc))
        self.where = where
        self.exc = exc


def stage(where, f, *args, **kwargs):
    """Calls f, tagging what it raises with where."""
    try:
        return f(*args, **kwargs)
    except StageError:
        raise
    except BaseException as e:  # noqa: B902 - experiment code may raise anything
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        raise StageError(where, e) from e


def classify(exc):
    """Maps an exception to an error kind: oom, cuda, import or exception."""
    name = type(exc).__name__
    low = str(exc).lower()
    if name == "OutOfMemoryError" or isinstance(exc, MemoryError) or "out of memory" in low:
        return "oom"
    if name in ("AcceleratorError", "CudaError") or "cuda error" in low or "illegal memory access" in low \
            or "device-side assert" in low or "cudaerror" in low or "an illegal instruction" in low:
        return "cuda"
    if isinstance(exc, ImportError):
        return "import"
    return "exception"


# What an error event may carry: the first and last halves of an
# exception's message (and class name) up to MAX_MESSAGE characters, of its
# traceback up to MAX_TRACEBACK (the runner bounds them again, in bytes:
# harness.MaxMessageBytes, MaxTracebackBytes). An implementation's
# `raise RuntimeError("A" * (60 << 20))` must not cost the job's log, its
# results and the history 60 MiB each.
MAX_MESSAGE = 4000
MAX_TRACEBACK = 16000


def bounded(text, limit, head=None):
    """text, or its first head and last limit-head characters (head: half)
    with a line saying how many were dropped between them."""
    if len(text) <= limit:
        return text
    if head is None:
        head = limit // 2
    tail = limit - head
    return "%s\n[xrun: %d characters dropped here]\n%s" % (text[:head], len(text) - head - tail, text[len(text) - tail:])


def error_event(exc):
    """The error event for exc (a StageError names its stage; anything else
    is the harness's)."""
    where = "harness"
    if isinstance(exc, StageError):
        where, exc = exc.where, exc.exc
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    name = bounded(type(exc).__name__, MAX_MESSAGE)
    text = str(exc)
    msg = bounded("%s: %s" % (name, text) if text else name, MAX_MESSAGE)
    # The traceback's end (the failing frame and the message) matters most.
    return ErrorEvent(kind=classify(exc), where=where, type=name, message=msg,
                      traceback=bounded(tb, MAX_TRACEBACK, head=MAX_TRACEBACK // 4))
