"""The zygote's own logic: the environment it imports in and the BLAS
thread count each forked worker gets back."""

import os

from xrun_harness import zygote


def test_blas_threads_precedence():
    assert zygote.blas_threads({"OPENBLAS_NUM_THREADS": "3", "OMP_NUM_THREADS": "5"}) == 3
    assert zygote.blas_threads({"GOTO_NUM_THREADS": "4", "OMP_NUM_THREADS": "5"}) == 4
    assert zygote.blas_threads({"OMP_NUM_THREADS": "6,2"}) == 6
    assert zygote.blas_threads({"OPENBLAS_NUM_THREADS": "x", "OMP_NUM_THREADS": "0"}) == len(os.sched_getaffinity(0))


def test_preload_restores_the_environment(monkeypatch):
    seen = []
    monkeypatch.setattr(zygote, "PRELOAD", ("xrun_harness.errors",))
    real = zygote.importlib.import_module
    monkeypatch.setattr(zygote.importlib, "import_module",
                        lambda name: seen.append(os.environ.get("OPENBLAS_NUM_THREADS")) or real(name))
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert zygote.preload() == ["xrun_harness.errors"]
    assert seen == ["1"]
    assert "OPENBLAS_NUM_THREADS" not in os.environ
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "7")
    zygote.preload()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "7"


def test_preload_adds_the_modules_the_runner_names(monkeypatch):
    monkeypatch.setattr(zygote, "PRELOAD", ("xrun_harness.errors",))
    monkeypatch.setenv(zygote.PRELOAD_ENV, " xrun_harness.tensors,, xrun_harness.errors,no_such_module_xrun ")
    assert zygote.preload_names(os.environ) == ["xrun_harness.errors", "xrun_harness.tensors", "no_such_module_xrun"]
    # One that is missing is left out of what the zygote says it loaded.
    assert zygote.preload() == ["xrun_harness.errors", "xrun_harness.tensors"]
    monkeypatch.delenv(zygote.PRELOAD_ENV)
    assert zygote.preload_names(os.environ) == ["xrun_harness.errors"]


def test_blas_setters_of_this_process():
    # Whatever OpenBLAS numpy loaded here has a setter (or none is loaded).
    import numpy  # noqa: F401

    setters, why = zygote.blas_setters()
    assert why == ""
    assert len(setters) == len(zygote.blas_libraries())


def test_become_gives_the_worker_its_environment_path_and_directory(monkeypatch, tmp_path):
    monkeypatch.setattr(zygote, "START_ENV", {"ZYGOTE_ONLY": "1", "PYTHONPATH": "/zygote/path"})
    monkeypatch.setenv("ZYGOTE_ONLY", "1")
    monkeypatch.setenv("PYTHONPATH", "/zygote/path")
    monkeypatch.setenv("SET_BY_AN_IMPORT", "kept")
    monkeypatch.setattr(zygote.sys, "path", ["/harness", "/zygote/path", "/usr/lib/python3"])
    monkeypatch.chdir("/")
    monkeypatch.delenv("JOB", raising=False)
    zygote.become({"PYTHONPATH": "/xrun/exp:/xrun/exp/lib", "JOB": "yes"}, str(tmp_path))
    assert os.environ.get("JOB") == "yes"
    assert "ZYGOTE_ONLY" not in os.environ
    assert os.environ.get("SET_BY_AN_IMPORT") == "kept"
    assert zygote.sys.path == ["/harness", "/xrun/exp", "/xrun/exp/lib", "/usr/lib/python3"]
    assert os.getcwd() == str(tmp_path)
