import math
import textwrap

import pytest

from xrun_harness.errors import StageError
from xrun_harness.loader import Code, case_params, positional_arity, resolve, split_inputs
from xrun_harness.protocol import Init, Models


@pytest.fixture
def mods(tmp_path, monkeypatch):
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "__init__.py").write_text("")
    (tmp_path / "exp" / "k.py").write_text(textwrap.dedent("""
        VALUE = 3

        class Ops:
            @staticmethod
            def add(x, y):
                return x + y

        def inputs(params, seed):
            return {"x": params["n"], "y": seed}

        def fn(x, y, scale=1):
            return (x + y) * scale

        def flops(params):
            return 2 * params["n"]

        def bytes_moved(params, impl):
            return float("inf") if impl == "huge" else 8.0

        def metrics(params, impl_params):
            return {"ctas": impl_params.get("scale", 0), 1: float("nan")}

        def bad_metrics(params, impl_params):
            return [1]
    """))
    (tmp_path / "broken.py").write_text("raise RuntimeError('import-time failure')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_resolve(mods):
    assert resolve("exp.k:Ops.add", "fn")(1, 2) == 3
    assert resolve("", "fn") is None


@pytest.mark.parametrize("ref, kind, message", [
    ("exp.nope:f", ModuleNotFoundError, "No module named 'exp.nope'"),
    ("exp.k:nope", ImportError, "exp.k:nope: module 'exp.k' has no attribute 'nope'"),
    ("exp.k:Ops.sub", ImportError, "exp.k:Ops.sub: module 'exp.k' has no attribute 'sub'"),
    ("exp.k:VALUE", ImportError, "exp.k:VALUE is not callable"),
    ("broken:f", RuntimeError, "import-time failure"),
])
def test_resolve_errors(mods, ref, kind, message):
    with pytest.raises(StageError) as e:
        resolve(ref, "reference")
    assert e.value.where == "reference" and isinstance(e.value.exc, kind) and message in str(e.value)


def test_positional_arity():
    def two(a, b, *, c=1):
        pass

    def var(a, *rest):
        pass
    assert positional_arity(two) == 2 and positional_arity(var) == math.inf
    assert positional_arity(lambda p: p) == 1
    assert positional_arity(print) in (1, math.inf)  # builtins may have no signature


def test_split_inputs():
    assert split_inputs((1, 2)) == ((1, 2), {})
    assert split_inputs([1]) == ((1,), {})
    assert split_inputs({"a": 1}) == ((), {"a": 1})
    assert split_inputs(5) == ((5,), {})


def test_case_params():
    p = {"n": 1}
    assert case_params(p, "cuda") == {"n": 1, "device": "cuda"} and p == {"n": 1}


def load(**kw):
    return Code.load(Init(impl=kw.pop("impl", "fused"), device="cpu", flush=False, **kw))


def test_code_calls(mods):
    code = load(fn="exp.k:fn", inputs="exp.k:inputs", impl_params={"scale": 10})
    args, kwargs = code.make_inputs({"n": 2}, 5)
    assert (args, kwargs) == ((), {"x": 2, "y": 5})
    assert code.call_fn(args, kwargs) == 70
    assert Code(fn=code.fn).call_fn((1, 2), {}) == 3
    with pytest.raises(StageError) as e:
        load(fn="exp.k:fn").make_inputs({}, 1)
    assert e.value.where == "inputs" and "names no inputs" in str(e.value)


def test_init_reports_the_first_failing_reference(mods):
    with pytest.raises(StageError) as e:
        load(fn="exp.k:nope", inputs="exp.nope:f")
    assert e.value.where == "inputs"
    with pytest.raises(StageError) as e:
        load(fn="exp.k:fn", models={"flops": "exp.k:flops", "bytes": "exp.k:gone"})
    assert e.value.where == "bytes"


def test_models(mods):
    code = load(fn="exp.k:fn", models={"flops": "exp.k:flops", "bytes": "exp.k:bytes_moved"}, metrics="exp.k:metrics",
                impl_params={"scale": 4})
    assert code.run_models({"n": 3}) == Models(flops=6.0, bytes=8.0, metrics={"ctas": 4.0, "1": 0.0})
    code = load(impl="huge", models={"bytes": "exp.k:bytes_moved"})
    assert code.run_models({}).bytes == 1.7976931348623157e308
    assert load().run_models({}) == Models()
    with pytest.raises(StageError) as e:
        load(metrics="exp.k:bad_metrics").run_models({})
    assert e.value.where == "metrics" and "metrics returned a list, not a dict" in str(e.value)
    with pytest.raises(StageError) as e:
        load(models={"flops": "exp.k:flops"}).run_models({})
    assert e.value.where == "flops" and isinstance(e.value.exc, KeyError)
