"""The harness package's tests: pure parts on the CPU with numpy (torch
where installed). Run by `make test-python`."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.dirname(HERE)  # runner/harness: the package, check.py and testdata
sys.path.insert(0, HARNESS)

from xrun_harness.backend import Backend  # noqa: E402


@pytest.fixture
def np():
    import numpy
    return numpy


@pytest.fixture
def torch():
    """torch, or a skip where it is not installed; under CI=true a missing
    torch fails (scripts/setup.sh installs python3-torch)."""
    try:
        import torch
    except ImportError as e:
        if os.environ.get("CI") == "true":
            pytest.fail("torch is missing under CI: %s" % e)
        pytest.skip("no torch: %s" % e)
    return torch


@pytest.fixture
def be(np):
    """A host Backend without torch."""
    return Backend(np)


@pytest.fixture
def tbe(np, torch):
    """A host Backend with torch."""
    return Backend(np, torch)


@pytest.fixture
def testdata(monkeypatch):
    """runner/harness/testdata on sys.path (its pkg holds fixture kernels)."""
    path = os.path.join(HARNESS, "testdata")
    monkeypatch.syspath_prepend(path)
    return path
