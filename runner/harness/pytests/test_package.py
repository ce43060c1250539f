"""The package as the runner ships it: Python 3.9 syntax (FindPython accepts
3.9), no module global set at run time."""
import ast
import os

import pytest

from conftest import HARNESS


def sources():
    out = [os.path.join(HARNESS, "harness.py"), os.path.join(HARNESS, "check.py")]
    for root, _, files in os.walk(os.path.join(HARNESS, "xrun_harness")):
        out += [os.path.join(root, f) for f in files if f.endswith(".py")]
    return sorted(out)


@pytest.mark.parametrize("path", sources(), ids=lambda p: os.path.relpath(p, HARNESS))
def test_python_39_syntax_and_no_globals_set(path):
    with open(path) as f:
        tree = ast.parse(f.read(), filename=path, feature_version=(3, 9))
    for node in ast.walk(tree):
        assert not isinstance(node, ast.Global), "%s:%d: a global statement" % (path, node.lineno)
