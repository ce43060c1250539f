"""The command loop in-process on the CPU, with the fixture kernels of
runner/harness/testdata/pkg (the Go tests run the same worker as a process)."""
import io
import json

from xrun_harness.worker import serve

INIT = {"op": "init", "impl": "fused", "fn": "pkg.kernels:add_scaled", "reference": "pkg.kernels:add",
        "inputs": "pkg.kernels:make_inputs", "device": "cpu", "flush": False,
        "models": {"flops": "pkg.kernels:flops", "bytes": "pkg.kernels:bytes_moved"}, "metrics": "pkg.kernels:metrics",
        "impl_params": {"scale": 1.0, "block": 10}}
PARAMS = {"n": 1000}


def run(*cmds):
    lines = "".join(json.dumps(dict(c, id=i + 1)) + "\n" for i, c in enumerate(cmds))
    out = io.StringIO()
    serve(io.StringIO(lines), out)
    return [json.loads(x) for x in out.getvalue().splitlines()]


def test_a_session(testdata):
    evs = run(INIT, {"op": "models", "params": PARAMS},
              {"op": "check", "params": PARAMS, "seeds": [1, 2], "tolerance": None},
              {"op": "time", "params": PARAMS, "seed": 1, "min_samples": 3, "max_samples": 5, "budget_ms": 1e6,
               "warmup_ms": 1, "flush": False},
              {"op": "exit"}, {"op": "models", "params": PARAMS})
    assert [(e["event"], e["id"]) for e in evs] == [("ready", 1), ("models", 2), ("correctness", 3), ("samples", 4)]
    ready, models, corr, samples = evs
    assert ready["protocol"] == 1 and ready["timer"] == "perf_counter" and ready["device"]["kind"] == "cpu"
    assert ready["flush_bytes"] == 0 and "timer_floor_ms" not in ready
    assert models == {"event": "models", "id": 2, "flops": 1000.0, "bytes": 8000.0, "metrics": {"blocks": 100.0}}
    assert corr["passed"] and corr["trials"] == 2 and corr["dtype"] == "float32"
    assert len(samples["samples_ms"]) == 5 and samples["warmup_calls"] >= 3 and "cover" not in samples


def test_errors_keep_the_worker_serving(testdata):
    evs = run({"op": "models", "params": PARAMS},
              dict(INIT, fn="pkg.kernels:raises", impl_params={}),
              {"op": "check", "params": PARAMS, "seeds": [1], "tolerance": None},
              {"op": "time", "params": PARAMS, "seed": 1, "min_samples": 1, "budget_ms": 1, "flush": False},
              {"op": "bogus"})
    assert [e["event"] for e in evs] == ["error", "ready", "error", "error", "error"]
    before, _, raised, missing, bogus = evs
    assert before["where"] == "harness" and "models before a successful init" in before["message"]
    assert (raised["kind"], raised["where"], raised["message"]) == ("exception", "fn", "ValueError: this kernel is broken")
    assert "raise ValueError" in raised["traceback"]
    assert missing["kind"] == "exception" and missing["message"] == "CommandError: time: warmup_ms is missing"
    assert bogus["id"] == 5 and "unknown op 'bogus'" in bogus["message"]


def test_import_errors(testdata):
    evs = run(dict(INIT, fn="pkg.kernels:nope"), dict(INIT, inputs="pkg.missing:f"))
    assert (evs[0]["kind"], evs[0]["where"]) == ("import", "fn") and "has no attribute 'nope'" in evs[0]["message"]
    assert (evs[1]["kind"], evs[1]["where"]) == ("import", "inputs") and "No module named 'pkg.missing'" in evs[1]["message"]


def test_unreadable_lines():
    out = io.StringIO()
    serve(io.StringIO('\n  \nnot json\n{"op":"exit"}\n'), out)
    (ev,) = [json.loads(x) for x in out.getvalue().splitlines()]
    assert ev["event"] == "error" and ev["id"] is None and "not JSON" in ev["message"]


def test_timing_reuses_the_checked_inputs(testdata, monkeypatch):
    # The first seed is checked last and its inputs timed; another seed's
    # are made again, and so are the inputs of an implementation that
    # modified them.
    from xrun_harness import loader

    made = []
    real = loader.Code.make_inputs

    def counted(self, params, seed):
        made.append(seed)
        return real(self, params, seed)

    monkeypatch.setattr(loader.Code, "make_inputs", counted)
    check = {"op": "check", "params": PARAMS, "seeds": [1, 2], "tolerance": None}

    def time(seed):
        return {"op": "time", "params": PARAMS, "seed": seed, "min_samples": 2, "max_samples": 2, "budget_ms": 1e6,
                "warmup_ms": 1, "flush": False}

    evs = run(INIT, check, time(1), time(2))
    assert [e["event"] for e in evs] == ["ready", "correctness", "samples", "samples"]
    assert evs[1]["seeds"] == [1, 2] and evs[1]["passed"]
    assert made == [2, 1, 2]
    made.clear()
    evs = run(dict(INIT, fn="pkg.kernels:zero_inputs", impl_params={}), check, time(1))
    assert evs[1]["inputs_modified"] and made == [2, 1, 1]
