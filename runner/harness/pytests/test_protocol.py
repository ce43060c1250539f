import json
import math

import pytest

from xrun_harness.protocol import (FLOAT_MAX, Check, CommandError, Correctness, Device, ErrorEvent, Exit, Init,
                                   ModelsCmd, Models, Profile, Profiled, Ready, Samples, Time, Tolerance, encode_event,
                                   finite, parse_command, read_line)


def parse(line):
    return parse_command(read_line(line))


# The lines as the runner's EncodeCommand writes them (protocol_test.go).
def test_time_as_the_runner_sends_it():
    t = parse('{"budget_ms":100,"flush":true,"id":9,"min_samples":4,"op":"time","params":{"T":256},"seed":3,"warmup_ms":100}')
    assert t == Time(params={"T": 256}, seed=3, min_samples=4, budget_ms=100.0, warmup_ms=100.0, flush=True)
    assert isinstance(t.budget_ms, float) and isinstance(t.warmup_ms, float)
    # Fields the runner leaves out when zero: their one default, which is
    # what their zero means.
    assert (t.max_samples, t.wall_ms, t.rest_ratio, t.kernel_clock_max_ms) == (0, 0.0, 0.0, 0.0)


def test_init_defaults():
    c = parse('{"op":"init","id":1,"impl":"x","device":"cpu","flush":false,"fn":"m:f"}')
    assert c == Init(impl="x", device="cpu", flush=False, fn="m:f")
    assert (c.reference, c.inputs, c.metrics, c.models, c.impl_params) == ("", "", "", {}, {})
    assert (c.flush_bytes, c.cuda_graph, c.kernel_clock, c.profile) == (0, False, False, False)


def test_nulls_the_runner_may_send():
    # A nil json.RawMessage, slice or pointer is null on the wire.
    c = parse('{"op":"check","id":3,"params":null,"seeds":null,"tolerance":null}')
    assert c == Check(params={}, seeds=[], tolerance=None)
    c = parse('{"op":"init","id":1,"impl":"x","device":"cuda","flush":true,"impl_params":null,"models":null,"flush_bytes":null}')
    assert c.impl_params == {} and c.models == {} and c.flush_bytes == 0


def test_tolerance_and_unknown_fields():
    c = parse('{"op":"check","id":3,"params":{"n":1},"seeds":[1,2],"tolerance":{"atol":1e-3,"rtol":0},"later":1}')
    assert c.tolerance == Tolerance(atol=1e-3, rtol=0.0) and c.seeds == [1, 2]


def test_other_commands():
    assert parse('{"op":"models","id":2,"params":{"B":4}}') == ModelsCmd(params={"B": 4})
    assert parse('{"op":"profile","id":4,"params":{},"seed":1,"label":"n=32"}') == Profile(params={}, seed=1, label="n=32")
    assert parse('{"op":"exit","id":5}') == Exit()


@pytest.mark.parametrize("line, message", [
    ('{"op":"time","id":1,"params":{},"seed":1,"min_samples":1,"budget_ms":1,"flush":true}', "time: warmup_ms is missing"),
    ('{"op":"time","id":1,"params":{},"seed":1.5,"min_samples":1,"budget_ms":1,"warmup_ms":1,"flush":true}',
     "time: seed must be an integer, not 1.5"),
    ('{"op":"time","id":1,"params":{},"seed":1,"min_samples":1,"budget_ms":"1","warmup_ms":1,"flush":true}',
     'time: budget_ms must be a number, not "1"'),
    ('{"op":"time","id":1,"params":{},"seed":1,"min_samples":true,"budget_ms":1,"warmup_ms":1,"flush":true}',
     "time: min_samples must be an integer, not true"),
    ('{"op":"init","id":1,"impl":"x","device":"gpu","flush":true}', 'init: device must be "cuda" or "cpu", not "gpu"'),
    ('{"op":"init","id":1,"impl":"x","device":"cpu","flush":1}', "init: flush must be true or false, not 1"),
    ('{"op":"init","id":1,"impl":"x","device":"cpu","flush":true,"models":{"flops":1}}', "init: models must be an object of"),
    ('{"op":"models","id":1,"params":[1]}', "models: params must be an object, not [1]"),
    ('{"op":"check","id":1,"params":{},"seeds":[1,"2"],"tolerance":null}', "check: seeds must be an integer"),
    ('{"op":"check","id":1,"params":{},"seeds":[1],"tolerance":{"atol":1}}', "tolerance: rtol is missing"),
    ('{"op":"nope","id":1}', "unknown op 'nope'; known: init, models, first, check, time, profile, exit"),
    ('{"id":1}', "unknown op None"),
    ("[1]", "a command line is a JSON object, not list"),
    ("{", "a command line is not JSON"),
])
def test_bad_commands(line, message):
    with pytest.raises(CommandError) as e:
        parse(line)
    assert message in str(e.value)


def test_finite_clamps_what_json_cannot_hold(np):
    assert finite(1.5) == 1.5 and finite(3) == 3.0
    assert finite(float("nan")) == 0.0
    assert finite(float("inf")) == FLOAT_MAX == 1.7976931348623157e308
    assert finite(-math.inf) == -FLOAT_MAX
    assert finite(np.float32("inf")) == FLOAT_MAX
    json.dumps(finite(math.inf), allow_nan=False)


def test_encode_event_leaves_out_absent_fields():
    ev = Samples(samples_ms=[0.5, 0.25], warmup_calls=3, warmup_ms=10.0, timer="perf_counter", sampling_ms=1.0)
    line = encode_event(ev, 4)
    assert line.endswith("\n") and line.count("\n") == 1
    assert json.loads(line) == {"event": "samples", "id": 4, "samples_ms": [0.5, 0.25], "warmup_calls": 3,
                                "warmup_ms": 10.0, "timer": "perf_counter", "sampling_ms": 1.0}
    assert " " not in line
    assert json.loads(encode_event(Profiled(), 7)) == {"event": "profiled", "id": 7}
    assert json.loads(encode_event(Models(flops=2.0), 2)) == {"event": "models", "id": 2, "flops": 2.0}


def test_encode_nested_events():
    ready = Ready(pid=1, python="3.11", numpy="1.24", torch="", triton="", cuda="", timer="perf_counter",
                  device=Device(kind="cpu", name="x86_64"))
    got = json.loads(encode_event(ready, 1))
    assert got["device"] == {"kind": "cpu", "name": "x86_64"}
    assert got["protocol"] == 1 and got["flush_bytes"] == 0 and "timer_floor_ms" not in got
    c = Correctness(passed=True, trials=1, seeds=[1], max_abs_error=0.0, max_rel_error=0.0, rms_rel_error=0.0,
                    mismatch_fraction=0.0, nan_mismatches=0, inf_mismatches=0, inputs_modified=False, replayed=False,
                    tolerance=Tolerance(atol=1e-4, rtol=1e-4), dtype="float32", reason="")
    assert json.loads(encode_event(c, 3))["tolerance"] == {"atol": 1e-4, "rtol": 1e-4}
    e = json.loads(encode_event(ErrorEvent(kind="oom", where="fn", type="MemoryError", message="m", traceback="t"), None))
    assert e["id"] is None and e["kind"] == "oom"


def test_encode_refuses_nan():
    with pytest.raises(ValueError):
        encode_event(Models(flops=float("nan")), 1)
