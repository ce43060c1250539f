import pytest

from xrun_harness.errors import StageError, classify, error_event, stage


class OutOfMemoryError(RuntimeError):
    pass


class AcceleratorError(RuntimeError):
    pass


@pytest.mark.parametrize("exc, kind", [
    (OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB"), "oom"),
    (MemoryError(), "oom"),
    (RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate; out of memory"), "oom"),
    (AcceleratorError("boom"), "cuda"),
    (RuntimeError("CUDA error: an illegal memory access was encountered"), "cuda"),
    (RuntimeError("device-side assert triggered"), "cuda"),
    (RuntimeError("cudaErrorLaunchFailure"), "cuda"),
    (ModuleNotFoundError("No module named 'x'"), "import"),
    (ValueError("bad block size"), "exception"),
])
def test_classify(exc, kind):
    assert classify(exc) == kind


def test_stage_tags_and_passes_through():
    def raises():
        raise ValueError("bad block size")
    with pytest.raises(StageError) as e:
        stage("fn", raises)
    assert e.value.where == "fn" and isinstance(e.value.exc, ValueError)
    with pytest.raises(StageError) as e2:
        stage("harness", stage, "inputs", raises)
    assert e2.value.where == "inputs"  # the innermost stage names it
    with pytest.raises(SystemExit):
        stage("fn", lambda: exit(3))
    assert stage("fn", lambda a, b=0: a + b, 1, b=2) == 3


def test_error_event():
    try:
        stage("fn", lambda: 1 / 0)
    except StageError as e:
        ev = error_event(e)
    assert (ev.kind, ev.where, ev.type, ev.message) == ("exception", "fn", "ZeroDivisionError",
                                                        "ZeroDivisionError: division by zero")
    assert "1 / 0" in ev.traceback
    ev = error_event(KeyError())
    assert (ev.where, ev.message) == ("harness", "KeyError")


def test_error_event_is_bounded():
    try:
        raise RuntimeError("A" * (60 << 20) + " END")
    except RuntimeError as e:
        ev = error_event(StageError("fn", e))
    assert ev.where == "fn" and ev.type == "RuntimeError" and ev.kind == "exception"
    assert len(ev.message) <= 4100 and ev.message.startswith("RuntimeError: AAA") and ev.message.endswith("A END")
    assert "characters dropped here" in ev.message
    assert len(ev.traceback) <= 16100 and ev.traceback.startswith("Traceback") and ev.traceback.endswith(" END\n")
