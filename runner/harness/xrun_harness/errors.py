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


def error_event(exc):
    """The error event for exc (a StageError names its stage; anything else
    is the harness's)."""
    where = "harness"
    if isinstance(exc, StageError):
        where, exc = exc.where, exc.exc
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    msg = "%s: %s" % (type(exc).__name__, exc) if str(exc) else type(exc).__name__
    return ErrorEvent(kind=classify(exc), where=where, type=type(exc).__name__, message=msg, traceback=tb[-16000:])
