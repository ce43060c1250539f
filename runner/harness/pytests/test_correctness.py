import pytest

from xrun_harness.correctness import (Stats, check, default_tolerance, find_replay, numpy_error_figures,
                                      tolerance_dtype, torch_error_figures)
from xrun_harness.errors import StageError
from xrun_harness.loader import Code
from xrun_harness.protocol import Check, Tolerance


@pytest.mark.parametrize("dtype, tol", [
    ("float64", 1e-7), ("complex128", 1e-7), ("float32", 1e-4), ("complex64", 1e-4),
    ("float16", 1e-2), ("bfloat16", 1e-2), ("float8_e4m3fn", 1e-1), ("float8_e5m2", 1e-1),
    ("int32", 0.0), ("int64", 0.0), ("bool", 0.0), ("uint8", 0.0),
])
def test_default_tolerance(dtype, tol):
    assert default_tolerance(dtype) == tol


def test_tolerance_of_mixed_dtypes():
    assert tolerance_dtype("float32", "float32") == "float32"
    assert tolerance_dtype("int64", "int64") == "int64"
    # A more precise reference: the less precise dtype's tolerance.
    assert tolerance_dtype("bfloat16", "float32") == "bfloat16"
    assert tolerance_dtype("float32", "float16") == "float16"
    assert tolerance_dtype("int64", "float32") is None
    assert tolerance_dtype("float32", "int32") is None


def test_numpy_error_figures(np):
    r = np.array([1.0, 2.0, 4.0, 0.0])
    o = np.array([1.0, 2.5, 4.0, 0.0])
    n, nan, inf, max_abs, max_rel, num2, den2, bad = numpy_error_figures(np, o, r, 1e-4, 1e-4)
    assert (n, nan, inf, bad) == (4, 0, 0, 1)
    assert max_abs == 0.5 and max_rel == 0.25 and num2 == 0.25 and den2 == 21.0
    assert numpy_error_figures(np, np.zeros(0), np.zeros(0), 0, 0) == (0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0)


def test_numpy_nan_and_inf_positions(np):
    nan, inf = np.nan, np.inf
    r = np.array([1.0, nan, inf, -inf, 5.0])
    o = np.array([nan, nan, inf, inf, 5.0])
    n, nan_mis, inf_mis, max_abs, _, _, _, bad = numpy_error_figures(np, o, r, 0.0, 0.0)
    assert (n, nan_mis, inf_mis, max_abs, bad) == (5, 1, 1, 0.0, 0)
    # No finite position in common: no figures but the counts.
    assert numpy_error_figures(np, np.array([nan]), np.array([1.0]), 0, 0) == (1, 1, 0, 0.0, 0.0, 0.0, 0.0, 0)


def test_stats_reasons(be, np):
    st = Stats(be)
    x = np.arange(10, dtype=np.float32)
    st.compare("output", x, x, None)
    assert st.reasons == [] and (st.atol, st.rtol) == (1e-4, 1e-4) and st.elements == 10
    st.compare("output[1]", x + 1, x, Tolerance(atol=0.5, rtol=0.0))
    assert st.reasons == ["output[1]: 10 of 10 elements outside atol=0.5 rtol=0"]
    assert st.max_abs == 1.0 and st.mismatched == 10 and st.atol == 0.5
    st.compare("output[2]", x[:-1], x, None)
    st.compare("output[3]", x.astype(np.int64), x, None)
    st.compare("output[4]", None, x, None)
    st.compare("output[5]", None, None, None)
    assert st.reasons[1:] == ["output[2] has shape [9], the reference's has [10]",
                              "output[3] has dtype int64, the reference's has float32",
                              "output[4] is None, the reference's is float32"]


def test_stats_less_precise_output(be, np):
    st = Stats(be)
    x = np.linspace(1, 2, 100, dtype=np.float32)
    st.compare("output", x.astype(np.float16), x, None)
    assert st.reasons == [] and st.atol == 1e-2
    st.compare("output", np.array([np.nan], np.float32), np.array([1.0], np.float32), None)
    assert st.nan == 1 and "1 NaN positions differ" in st.reasons[0]


def test_find_replay():
    assert find_replay([]) is None
    assert find_replay([(1, "a", "r1"), (2, "b", "r2")]) is None
    assert find_replay([(1, "a", "r1"), (2, "a", "r1")]) is None  # the same inputs: the same output
    assert find_replay([(1, "a", "r1"), (2, "b", "r2"), (3, "a", "r3")]) == (1, 3)


def make_inputs(params, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    return rng.standard_normal(params["n"]).astype(np.float32), rng.standard_normal(params["n"]).astype(np.float32)


def add(x, y):
    return x + y


def run_check(be, fn, seeds=(1, 2, 3), tol=None, reference=add):
    code = Code("impl", fn=fn, reference=reference, inputs=make_inputs)
    return check(be, code, Check(params={"n": 100}, seeds=list(seeds), tolerance=tol), {"n": 100, "device": "cpu"})


def test_check_passes(be):
    c = run_check(be, add)
    assert c.passed and c.reason == "" and c.trials == 3 and c.seeds == [1, 2, 3] and c.dtype == "float32"
    assert c.tolerance == Tolerance(atol=1e-4, rtol=1e-4) and c.mismatch_fraction == 0.0


def test_check_fails(be):
    c = run_check(be, lambda x, y: x - y)
    assert not c.passed and c.mismatch_fraction > 0.9 and "elements outside atol=0.0001 rtol=0.0001" in c.reason
    # One output wrong at every seed is one reason, with its worst count.
    assert c.reason.count("elements outside") == 1 and c.reason.endswith("(the most of 3 seeds)")
    c = run_check(be, lambda x, y: x - y, tol=Tolerance(atol=100.0, rtol=0.0))
    assert c.passed and c.tolerance.atol == 100.0


def test_check_modified_inputs(be):
    def zero(x, y):
        out = x + y
        x[:] = 0
        return out
    c = run_check(be, zero)
    assert c.inputs_modified and not c.passed and "modified its inputs" in c.reason


def test_check_replayed(be):
    cache = []

    def replay(x, y):
        if not cache:
            cache.append(x + y)
        return cache[0].copy()
    c = run_check(be, replay)
    assert c.replayed and "the output for seed 2 is bitwise identical to the output for seed 1" in c.reason


def test_check_output_count(be):
    c = run_check(be, lambda x, y: (x + y, x * y))
    assert c.reason == "the implementation returned 2 outputs, the reference 1"


def test_check_needs_a_reference(be):
    with pytest.raises(StageError) as e:
        run_check(be, add, reference=None)
    assert e.value.where == "reference"


def test_check_tags_the_failing_stage(be):
    def broken(x, y):
        raise ValueError("broken")
    with pytest.raises(StageError) as e:
        run_check(be, broken)
    assert e.value.where == "fn" and str(e.value) == "broken"
    with pytest.raises(StageError) as e:
        run_check(be, add, reference=lambda x, y: object())
    assert e.value.where == "reference" and "outputs must be tensors" in str(e.value)


def test_torch_figures_match_numpy(np, torch):
    r = np.array([1.0, 2.0, 4.0, 0.0, np.nan, np.inf, 3.0])
    o = np.array([1.0, 2.5, 4.0, 1e-9, np.nan, -np.inf, np.nan])
    want = numpy_error_figures(np, o, r, 1e-4, 1e-4)
    got = torch_error_figures(torch, torch.tensor(o, dtype=torch.float32), torch.tensor(r, dtype=torch.float32), 1e-4, 1e-4)
    assert got[:3] == want[:3] and got[7] == want[7]
    assert got[3:7] == pytest.approx(want[3:7])


def test_check_on_torch_tensors(tbe, torch):
    def inputs(params, seed):
        g = torch.Generator().manual_seed(seed)
        return {"a": torch.randn(8, 8, generator=g), "b": torch.randn(8, 8, generator=g)}

    def ref(a, b):
        return {"c": a @ b}

    code = Code("impl", fn=lambda a, b: {"c": (a @ b).to(torch.bfloat16)}, reference=ref, inputs=inputs)
    c = check(tbe, code, Check(params={}, seeds=[1, 2], tolerance=None), {"device": "cpu"})
    assert c.passed and c.dtype == "float32" and c.tolerance.atol == 1e-2
