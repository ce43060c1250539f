import collections

import pytest

from xrun_harness.tensors import bitwise_equal, clone, digest, dtype_name, flatten, poison, to_float64


def test_clone_copies_arrays(be, np):
    Pair = collections.namedtuple("Pair", "x y")
    x = np.arange(4.0)
    got = clone(be, ([x], {"k": Pair(x, 2)}))
    got[0][0][0] = 9
    got[1]["k"].x[1] = 9
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0] and isinstance(got[1]["k"], Pair)


def test_bitwise_equal(be, np):
    a = np.array([1.0, np.nan])
    assert bitwise_equal(be, (a, {"n": 1}), (a.copy(), {"n": 1}))
    assert not bitwise_equal(be, a, a.astype(np.float32))
    assert not bitwise_equal(be, a, [1.0, np.nan])
    assert bitwise_equal(be, float("nan"), float("nan"))
    assert not bitwise_equal(be, [1, 2], [1, 2, 3])
    assert not bitwise_equal(be, {"a": 1}, {"b": 1})


def test_dtype_names(be, np):
    assert [dtype_name(be, x) for x in (np.zeros(1, np.float16), True, 3, 1.5, 1j, np.int8(1), "s")] == \
        ["float16", "bool", "int64", "float64", "complex128", "int8", "str"]


def test_flatten(be, np):
    x = np.zeros(2)
    out = flatten(be, (x, [1.5, None], {"b": 2, "a": x}))
    assert [p for p, _ in out] == ["output[0]", "output[1][0]", "output[1][1]", "output[2]['a']", "output[2]['b']"]
    with pytest.raises(TypeError, match=r"output\[1\] is a str; outputs must be tensors"):
        flatten(be, (x, "s"))


def test_to_float64(be, np):
    assert to_float64(be, np.array([1, 2], np.int32)).dtype == np.float64
    assert to_float64(be, np.array([1j], np.complex64)).dtype == np.complex128
    assert to_float64(be, 3).shape == ()


def test_digest(be, np):
    x = np.arange(6, dtype=np.float32)
    d = digest(be, [("output", x)])
    assert d == digest(be, [("output", x.copy())])
    assert d != digest(be, [("output", x + 1)])
    assert d != digest(be, [("output[0]", x)])
    assert d != digest(be, [("output", x.reshape(2, 3))])
    assert digest(be, [("output", None)]) != digest(be, [("output", 0)])


def test_poison_leaves_host_memory_alone(be, np):
    poison(be, [("output", np.zeros(3))])  # on the host: nothing to do


def test_torch_tensors(tbe, torch):
    t = torch.tensor([1.0, float("nan")], dtype=torch.bfloat16)
    assert dtype_name(tbe, t) == "bfloat16"
    c = clone(tbe, t)
    assert c is not t and bitwise_equal(tbe, t, c)
    assert not bitwise_equal(tbe, t, t.to(torch.float32))
    assert bitwise_equal(tbe, torch.zeros(0), torch.zeros(0))
    assert bitwise_equal(tbe, torch.tensor([True, False]), torch.tensor([True, False]))
    assert digest(tbe, [("output", t)]) == digest(tbe, [("output", c)])
    assert digest(tbe, [("output", t)]) != digest(tbe, [("output", t.to(torch.float32))])
    assert to_float64(tbe, t).dtype.name == "float64"
    assert [p for p, _ in flatten(tbe, (t, t))] == ["output[0]", "output[1]"]
