"""The check of an autotuner's choice (xrun_harness.tunecheck) and the
GPU warm-up's stopping rule (xrun_harness.gpu.warm), on the host: a
stand-in for Triton's autotuner (test_autotune's) and a stand-in for the
GPU sampler whose samples depend on the config the autotuner runs."""
import os
import types

import pytest

from test_autotune import BIG, SMALL, Autotuner, Config, fake_triton  # noqa: F401 - the fixture
from xrun_harness import autotune, tunecheck
from xrun_harness.gpu import warm
from xrun_harness.protocol import First
from xrun_harness.worker import Worker

MID = Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=4)


def test_candidates():
    timings = {"a": 1.0, "b": 1.2, "c": 0.9, "d": 3.0}
    assert tunecheck.candidates("a", timings, 3) == ["a", "c", "b"]
    assert tunecheck.candidates("d", timings, 2) == ["d", "c"]
    assert tunecheck.candidates("a", {"a": 1.0}, 3) == ["a"]


@pytest.mark.parametrize("source, medians, run, replaced, beaten, says", [
    # The H200 at N = 512: tuned on a GPU coming up from idle to
    # 128x256x64 (9.45 us), which a warm retune beat by 41 %.
    ("tuned", {"128x256x64/w8/s3": 0.00945, "128x64x32/w4/s4": 0.0067}, "128x64x32/w4/s4", "128x256x64/w8/s3", "",
     "41.0 % faster than the autotuner's choice"),
    ("tuned", {"a": 1.0, "b": 0.995}, "a", "", "", "within the check's 1 % margin"),
    ("tuned", {"a": 1.0, "b": 1.1}, "a", "", "", "was the fastest of the 2 configs"),
    ("cache", {"a": 1.0, "b": 0.9}, "a", "", "b", "the cached choice a was beaten: b ran 11.1 % faster"),
    ("cache", {"a": 1.0, "b": 0.98}, "a", "", "", "within 3 % of the fastest"),
])
def test_decide(source, medians, run, replaced, beaten, says):
    got = tunecheck.decide(next(iter(medians)), medians, source)
    assert got[:3] == (run, replaced, beaten) and says in got[3]


def test_run_check_interleaves():
    order, current = [], {}

    def batch():
        order.append(current["c"])
        return [{"a": 2.0, "b": 1.0}[current["c"]]] * 3, "kernel"

    med, clock, rounds = tunecheck.run_check(["a", "b"], lambda c: current.update(c=c), batch, 3)
    assert order == ["a", "b"] * 3 and med == {"a": 2.0, "b": 1.0} and clock == "kernel" and rounds == 3
    # Past its wall time no round starts after the first.
    ticks = iter(range(0, 100, 10))
    order.clear()
    _, _, rounds = tunecheck.run_check(["a", "b"], lambda c: current.update(c=c), batch, 3, wall_ms=5000.0,
                                       clock=lambda: next(ticks))
    assert rounds == 1 and order == ["a", "b"]


def test_warm_stops_once_steady():
    assert not warm.steady([5.0, 3.0, 1.0, 1.0])  # too few batches
    assert not warm.steady([5.0, 3.0, 2.0, 1.5, 1.0, 1.0])  # still falling
    assert warm.steady([5.0, 3.0, 1.0, 1.0, 1.005, 1.0])
    assert not warm.steady([1.0, 1.0, 1.0, 1.0, 1.2, 1.0])  # not within 1 %


class FakeGPU:
    """Samples as the config the autotuner runs makes them: TIMES ms on
    the kernel clock."""
    TIMES = {"128x256x64/w8/s3": 2.0, "64x64x32/w4/s4": 1.0, "128x64x32/w4/s4": 1.6}

    def __init__(self, tuner):
        self.tuner, self.kclock, self.batches = tuner, types.SimpleNamespace(launch_ms=0.001), 0

    def long_call(self, call, t, enqueue_ms):
        return ""

    def sample(self, ev, call, t, rule, enqueue_ms, long_call=""):
        self.batches += 1
        call()
        ms = self.TIMES[autotune.config_label(self.tuner.best_config)]
        ev.samples_ms = [ms + 0.01] * t.min_samples
        ev.kernel_ms = [ms] * t.min_samples


def worker(tuner):
    be = types.SimpleNamespace(sync=lambda: None, timer="cuda_events")
    code = types.SimpleNamespace(make_inputs=lambda params, seed: (([1, 2],), {}),
                                 call_fn=lambda args, kwargs: tuner.run(*args, n=len(args[0])))
    w = Worker()
    w.be, w.code, w.gpu = be, code, FakeGPU(tuner)
    w.device_name = lambda: "NVIDIA H200"
    return w


def first(**kw):
    base = dict(params={"n": 2}, seed=1, check_configs=3, check_rounds=3, check_budget_ms=1.0)
    base.update(kw)
    return First(**base)


def test_a_tuned_choice_beaten_on_the_runners_clock_is_replaced_and_stored(fake_triton, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    # The autotuner's timings (as on a GPU coming up from idle) favour BIG;
    # the runner's clock reads SMALL twice as fast.
    t = Autotuner([BIG, SMALL, MID], key=["n"], name="matmul_kernel", times=(1.5, 2.8, 2.0), cache_results=True)
    t.fn = types.SimpleNamespace(cache_key="src-v1")
    w = worker(t)
    ev = w.first(first(), {"n": 2})
    (a,) = ev.autotune
    assert a.source == "tuned" and a.config == "64x64x32/w4/s4" and a.params["BLOCK_N"] == 64
    assert a.timings_ms == {"128x256x64/w8/s3": 1.5, "64x64x32/w4/s4": 2.8, "128x64x32/w4/s4": 2.0}  # the autotuner's reading, kept
    c = a.check
    assert c["replaced"] == "128x256x64/w8/s3" and c["stored"] and c["clock"] == "kernel" and c["rounds"] == 3
    assert c["timings_ms"] == {"128x256x64/w8/s3": 2.001, "64x64x32/w4/s4": 1.001, "128x64x32/w4/s4": 1.601}
    assert w.gpu.batches == 9  # 3 configs x 3 rounds
    assert autotune.config_label(t.cache[(2, "torch.float16")]) == "64x64x32/w4/s4"  # what the timed calls run
    stored = [f for _, _, fs in os.walk(tmp_path) for f in fs]
    assert len(stored) == 1 and stored[0].endswith(tunecheck.STORED_SUFFIX)

    # A later run (a new process) reads Triton's cache, whose choice is
    # still BIG: the stored check replaces it, and the check agrees.
    again = Autotuner([BIG, SMALL, MID], key=["n"], name="matmul_kernel", times=(1.5, 2.8, 2.0), cache_results=True)
    again.fn = t.fn
    (b,) = worker(again).first(first(), {"n": 2}).autotune
    assert b.source == "cache" and b.config == "64x64x32/w4/s4" and "replaced" not in b.check and "beaten" not in b.check
    assert "an earlier run stored" in b.check["note"]

    # --retune forgets both Triton's results and the stored checks.
    (tmp_path / "t1").mkdir()
    (tmp_path / "t1" / "matmul_kernel.autotune.json").write_text("{}")
    assert autotune.forget(str(tmp_path)) == (2, [])


def test_a_cached_choice_beaten_is_reported_and_still_runs(fake_triton, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    Autotuner.disk[(2, "torch.float16")] = {BIG: [1.5], SMALL: [2.8]}  # an earlier run's, no check stored
    t = Autotuner([BIG, SMALL], key=["n"], name="matmul_kernel", cache_results=True)
    t.fn = types.SimpleNamespace(cache_key="src-v1")
    (a,) = worker(t).first(first(), {"n": 2}).autotune
    assert a.source == "cache" and a.config == "128x256x64/w8/s3"
    assert a.check["beaten"] == "64x64x32/w4/s4" and "99.9 % faster" in a.check["note"] and "stored" not in a.check
    assert autotune.config_label(t.cache[(2, "torch.float16")]) == "128x256x64/w8/s3"


def test_no_check_unless_asked(fake_triton):
    t = Autotuner([BIG, SMALL], key=["n"], name="matmul_kernel")
    w = worker(t)
    (a,) = w.first(first(check_configs=0), {"n": 2}).autotune
    assert a.config == "128x256x64/w8/s3" and a.check is None and w.gpu.batches == 0
