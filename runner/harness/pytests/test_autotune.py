"""The autotuners' choices in a first call (xrun_harness.autotune), against
a stand-in for triton.runtime.autotuner that keeps Triton's attributes:
cache (key -> Config), configs, best_config, bench_time, configs_timings
and cache_results, with its disk cache in a dict."""
import io
import json
import os
import sys
import types

import pytest

from xrun_harness import autotune
from xrun_harness.worker import serve


class Config:
    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None):
        self.kwargs, self.num_warps, self.num_stages, self.num_ctas, self.maxnreg = kwargs, num_warps, num_stages, num_ctas, maxnreg


class Autotuner:
    """Triton's run: tune at a new key (or read the disk cache), then run
    the best config. Config i "takes" times[i] ms."""
    disk = {}

    def __init__(self, configs, key, name, times=(1.5, 2.8), cache_results=False):
        self.configs, self.keys, self.cache, self.times = configs, key, {}, times
        self.cache_results = cache_results
        self.base_fn = types.SimpleNamespace(__name__=name)

    def run(self, xs, **kw):
        key = tuple(kw[k] for k in self.keys) + ("torch.float16",)
        if key not in self.cache:
            if self.cache_results and key in self.disk:
                self.configs_timings = self.disk[key]
            else:
                self.configs_timings = {c: [t, t * 0.9, t * 1.1] for c, t in zip(self.configs, self.times)}
                self.bench_time = 0.25
                if self.cache_results:
                    self.disk[key] = self.configs_timings
            self.cache[key] = min(self.configs_timings, key=lambda c: self.configs_timings[c][0])
        self.best_config = self.cache[key]
        return [2 * x for x in xs]


@pytest.fixture
def fake_triton(monkeypatch):
    mod = types.ModuleType("triton.runtime.autotuner")
    mod.Autotuner, mod.Config = Autotuner, Config
    runtime = types.ModuleType("triton.runtime")
    runtime.autotuner = mod
    triton = types.ModuleType("triton")
    triton.runtime = runtime
    for name, m in (("triton", triton), ("triton.runtime", runtime), ("triton.runtime.autotuner", mod)):
        monkeypatch.setitem(sys.modules, name, m)
    Autotuner.disk = {}
    return mod


BIG = Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3)
SMALL = Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=4)


def test_labels():
    assert autotune.config_label(BIG) == "128x256x64/w8/s3"
    assert autotune.config_label(Config({"XBLOCK": 1024}, num_warps=4, num_stages=1, num_ctas=2, maxnreg=128)) == "1024/w4/s1/c2/r128"
    assert autotune.config_label(Config({"SPLIT": 4}, num_warps=2, num_stages=2)) == "SPLIT=4/w2/s2"
    assert autotune.config_params(BIG) == {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8,
                                           "num_warps": 8, "num_stages": 3, "num_ctas": 1}


def test_tuned_then_reused(fake_triton):
    t = Autotuner([BIG, SMALL], key=["n"], name="matmul_kernel")
    with autotune.recording() as rec:
        t.run([1], n=8192)
        t.run([1], n=8192)  # the same choice is recorded once
    (c,) = rec.choices
    assert (c["kernel"], c["kind"], c["config"], c["source"], c["key"]) == ("matmul_kernel", "triton", "128x256x64/w8/s3", "tuned", "8192, torch.float16")
    assert c["tuning_ms"] == 250.0 and c["timings_ms"] == {"128x256x64/w8/s3": 1.5, "64x64x32/w4/s4": 2.8}
    with autotune.recording() as rec:
        t.run([1], n=8192)
    assert [(c["config"], c["source"]) for c in rec.choices] == [("128x256x64/w8/s3", "reused")]
    assert "tuning_ms" not in rec.choices[0]


def test_a_slower_config_under_disturbance_is_what_is_recorded(fake_triton):
    # The record says what ran, whichever config won.
    t = Autotuner([BIG, SMALL], key=["n"], name="matmul_kernel", times=(4.0, 2.8))
    with autotune.recording() as rec:
        t.run([1], n=8192)
    assert rec.choices[0]["config"] == "64x64x32/w4/s4" and rec.choices[0]["source"] == "tuned"


def test_read_from_the_autotune_cache(fake_triton):
    first = Autotuner([BIG, SMALL], key=["n"], name="matmul_kernel", cache_results=True)
    with autotune.recording() as rec:
        first.run([1], n=4096)
    assert rec.choices[0]["source"] == "tuned"
    again = Autotuner([BIG, SMALL], key=["n"], name="matmul_kernel", cache_results=True)  # a new process's
    with autotune.recording() as rec:
        again.run([1], n=4096)
    (c,) = rec.choices
    assert c["source"] == "cache" and c["config"] == "128x256x64/w8/s3" and "tuning_ms" not in c


def test_one_config_is_not_tuned(fake_triton):
    t = Autotuner([SMALL], key=["n"], name="k")
    t.run = types.MethodType(lambda self, xs, **kw: setattr(self, "best_config", SMALL), t)
    with autotune.recording() as rec:
        Autotuner.run(t, [1], n=1)
    assert rec.choices[0]["source"] == "single"


def test_recording_leaves_triton_as_it_was(fake_triton):
    run = Autotuner.__dict__["run"]
    with autotune.recording():
        assert Autotuner.__dict__["run"] is not run
    assert Autotuner.__dict__["run"] is run
    with pytest.raises(RuntimeError):
        with autotune.recording():
            raise RuntimeError("the call failed")
    assert Autotuner.__dict__["run"] is run


def test_nothing_to_record_without_triton(monkeypatch):
    monkeypatch.delitem(sys.modules, "triton.runtime.autotuner", raising=False)
    with autotune.recording() as rec:
        pass
    assert rec.choices == []


def test_first_command(fake_triton, testdata):
    init = {"op": "init", "impl": "triton", "fn": "pkg.autotuned:double", "reference": "pkg.autotuned:reference",
            "inputs": "pkg.autotuned:make_inputs", "device": "cpu", "flush": False}
    cmds = [init, {"op": "first", "params": {"n": 64}, "seed": 7}, {"op": "first", "params": {"n": 64}, "seed": 7},
            {"op": "first", "params": {"n": 32}}]
    lines = "".join(json.dumps(dict(c, id=i + 1)) + "\n" for i, c in enumerate(cmds))
    out = io.StringIO()
    serve(io.StringIO(lines), out)
    evs = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [e["event"] for e in evs] == ["ready", "first", "first", "error"]
    tuned, reused, missing = evs[1:]
    assert tuned["ms"] >= 0 and [(a["config"], a["source"], a["key"]) for a in tuned["autotune"]] == [("128x256x64/w8/s3", "tuned", "64, torch.float16")]
    assert tuned["autotune"][0]["params"]["num_warps"] == 8 and tuned["autotune"][0]["tuning_ms"] == 250.0
    assert [a["source"] for a in reused["autotune"]] == ["reused"]
    assert missing["message"] == "CommandError: first: seed is missing"


def test_forget(tmp_path):
    for rel in ("a1/matmul_kernel.autotune.json", "b2/deep/other.autotune.json", "a1/matmul_kernel.cubin", "c3/__grp__x.json"):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("{}")
    assert autotune.forget(str(tmp_path)) == (2, [])
    left = sorted(os.path.relpath(os.path.join(r, f), tmp_path) for r, _, fs in os.walk(tmp_path) for f in fs)
    assert left == ["a1/matmul_kernel.cubin", "c3/__grp__x.json"]
    assert autotune.forget(str(tmp_path / "missing")) == (0, [])
