"""check.py, the import checker the runner runs before any worker starts
(python3 -c <its source> '<refs as JSON>'): it finds modules and functions
by parsing, without importing."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import check
from conftest import HARNESS


@pytest.fixture
def exp(tmp_path, monkeypatch):
    (tmp_path / "gla").mkdir()
    (tmp_path / "gla" / "__init__.py").write_text("import torch_that_is_not_installed\n")
    (tmp_path / "gla" / "ops.py").write_text(textwrap.dedent("""
        import os as _os
        from math import sqrt as root
        A, (B, *C) = 1, (2, 3)
        def chunk_gla(q): pass
        class Kernel: pass
        if True:
            def in_if(): pass
        try:
            def in_try(): pass
        except ImportError:
            pass
    """))
    (tmp_path / "gla" / "star.py").write_text("from math import *\n")
    (tmp_path / "gla" / "bad.py").write_text("def f(:\n")
    (tmp_path / "mod.py").write_text("def f(): pass\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("ref", ["gla.ops:chunk_gla", "gla.ops:Kernel.run", "gla.ops:root", "gla.ops:C", "gla.ops:in_if",
                                 "gla.ops:in_try", "gla.star:anything", "json:dumps", "sys:exit"])
def test_found(exp, ref):
    check.check(ref)


@pytest.mark.parametrize("ref, message, file, line", [
    ("gla.ops", "'gla.ops' is not module:function", "", 0),
    ("gla.nope:f", "module gla.nope not found (looked in gla)", "", 0),
    ("nope.x:f", "module nope not found (looked in the experiment", "", 0),
    ("mod.x:f", "mod is a module, not a package: mod.x cannot be in it", "mod.py", 0),
    ("gla.ops:chunk", "module gla.ops has no function chunk; did you mean chunk_gla? (its functions: Kernel, chunk_gla, in_if, "
     "in_try)", "gla/ops.py", 0),
    ("gla.bad:f", "SyntaxError:", "gla/bad.py", 1),
])
def test_problems(exp, ref, message, file, line):
    with pytest.raises(check.Problem) as e:
        check.check(ref)
    assert message in e.value.message
    assert e.value.file.endswith(file) and e.value.line == line


def test_a_missing_function_lists_only_the_modules_own(exp):
    """Imported names (np, root) are no functions of the module's to offer."""
    (exp / "imp.py").write_text("import numpy as np\nfrom math import sqrt as root\ndef make_inputs(p, s): pass\n")
    with pytest.raises(check.Problem) as e:
        check.check("imp:make_input")
    assert e.value.message == "module imp has no function make_input; did you mean make_inputs? (its functions: make_inputs)"


def test_a_misspelt_module_gets_the_closest(exp, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(exp))
    with pytest.raises(check.Problem) as e:
        check.check("glaa.ops:chunk_gla")
    assert "module glaa not found" in e.value.message and "did you mean gla?" in e.value.message


@pytest.mark.parametrize("ref", ["torch_not_here.nn:relu", "json:no_such_function"])
def test_host_leaves_installed_packages_to_the_container(exp, monkeypatch, ref):
    """On the submitting host a package may be missing or another version."""
    monkeypatch.setenv("PYTHONPATH", str(exp))
    with pytest.raises(check.Skip):
        check.check(ref, host=True)


def test_host_judges_the_experiments_own_modules(exp, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(exp))
    with pytest.raises(check.Problem) as e:
        check.check("gla.ops:chunk", host=True)
    assert "did you mean chunk_gla?" in e.value.message
    check.check("gla.ops:chunk_gla", host=True)


def test_as_the_runner_runs_it(exp):
    with open(os.path.join(HARNESS, "check.py")) as f:
        src = f.read()
    refs = [{"key": "benchmark.inputs", "ref": "gla.ops:chunk_gla"}, {"key": "benchmark.reference", "ref": "gla.ops:nope"}]
    out = subprocess.run([sys.executable, "-c", src, json.dumps(refs)], cwd=str(exp), env=dict(os.environ, PYTHONPATH=str(exp)),
                         check=True, capture_output=True, text=True).stdout
    (p,) = json.loads(out)
    assert (p["key"], p["ref"], p["file"], p["line"]) == ("benchmark.reference", "gla.ops:nope", os.path.join("gla", "ops.py"), 0)


def test_a_file_problem_is_said_once(exp):
    """A syntax error is one problem of the file, not one per key naming it;
    it shows the line."""
    with open(os.path.join(HARNESS, "check.py")) as f:
        src = f.read()
    refs = [{"key": "benchmark.inputs", "ref": "gla.bad:f"}, {"key": "benchmark.reference", "ref": "gla.bad:g"},
            {"key": "benchmark.implementations.x.fn", "ref": "gla.bad:h"}, {"key": "benchmark.flops", "ref": "gla.ops:nope"}]
    out = subprocess.run([sys.executable, "-c", src, json.dumps(refs)], cwd=str(exp), env=dict(os.environ, PYTHONPATH=str(exp)),
                         check=True, capture_output=True, text=True).stdout
    bad, nope = json.loads(out)
    assert bad["key"] == "benchmark.inputs" and bad["line"] == 1
    assert bad["message"].startswith("SyntaxError: ") and ": def f(:" in bad["message"]
    assert bad["message"].endswith("(also named by benchmark.reference, benchmark.implementations.x.fn)")
    assert nope["key"] == "benchmark.flops"
