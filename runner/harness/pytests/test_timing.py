import pytest

from xrun_harness.loader import Code
from xrun_harness.protocol import Time
from xrun_harness.timing import SAMPLE_CAP, Batches, StopRule, sample_host, warmed_up, warmup


def cmd(**kw):
    base = dict(params={}, seed=1, min_samples=3, budget_ms=10.0, warmup_ms=0.0, flush=False)
    base.update(kw)
    return Time(**base)


def test_stop_rule_defaults():
    assert StopRule.of(cmd()) == StopRule(3, SAMPLE_CAP, 10.0, 40.0)  # wall_ms 0: 4 x budget_ms
    assert StopRule.of(cmd(min_samples=0, max_samples=0)) == StopRule(1, SAMPLE_CAP, 10.0, 40.0)
    assert StopRule.of(cmd(min_samples=5, max_samples=2, wall_ms=7.0)) == StopRule(5, 5, 10.0, 7.0)


def test_stop_rule():
    r = StopRule(min_n=3, max_n=10, budget_ms=5.0, wall_ms=20.0)
    assert not r.done(2, 100.0, 100.0)  # the minimum first
    assert r.done(3, 5.0, 0.0) and r.done(3, 0.0, 20.0) and not r.done(3, 4.9, 19.9)
    assert r.done(10, 0.0, 0.0)
    assert r.out_of_time(3, 20.0) and not r.out_of_time(2, 50.0) and not r.out_of_time(3, 19.0)


@pytest.mark.parametrize("n, elapsed, last, first, done", [
    (1, 50.0, 1.0, False, False),  # under warmup_ms
    (1, 100.0, 1.0, False, True),  # later batches: the time alone
    (2, 100.0, 1.0, True, False),  # the first: at least 3 calls
    (3, 100.0, 1.0, True, True),
    (3, 150.0, 50.0, True, False),  # a long call (5 x 50 > 100): at least 5
    (5, 250.0, 50.0, True, True),
])
def test_warmed_up(n, elapsed, last, first, done):
    assert warmed_up(n, elapsed, last, 100.0, first) == done


def test_warmup_and_host_samples():
    calls, syncs = [], []
    n, el, enq = warmup(lambda: calls.append(1), lambda: syncs.append(1), 0.0, True)
    assert n == len(calls) == len(syncs) == 5 and el >= 0 and enq >= 0
    got = sample_host(lambda: None, StopRule(min_n=4, max_n=6, budget_ms=1e9, wall_ms=1e9))
    assert len(got) == 6 and all(x >= 0 for x in got)
    assert len(sample_host(lambda: None, StopRule(min_n=4, max_n=SAMPLE_CAP, budget_ms=0.0, wall_ms=0.0))) == 4


def test_batches_keep_a_case_inputs(be):
    made, calls = [], []

    def inputs(params, seed):
        made.append((params["n"], seed))
        return [params["n"]]

    b = Batches(be, Code(fn=lambda n: calls.append(n), inputs=inputs))
    ev = b.batch(cmd(max_samples=4), {"n": 1})
    assert (ev.timer, len(ev.samples_ms), ev.warmup_calls, ev.cover) == ("perf_counter", 4, 5, None)
    assert len(calls) == 1 + 5 + 4  # the untimed first call, the warm-up, the samples
    ev = b.batch(cmd(max_samples=2), {"n": 1})
    assert ev.warmup_calls == 1 and made == [(1, 1)]
    b.batch(cmd(max_samples=2, seed=2), {"n": 1})
    assert made == [(1, 1), (1, 2)]
