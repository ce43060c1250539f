"""The protocol's golden lines (runner/harness/testdata/protocol): commands
as the runner writes them, events as this package writes them. The Go side
holds itself to the same lines (golden_test.go), so neither copy of the
protocol can drift from the other's."""
import dataclasses
import json
import os
import typing

from xrun_harness import protocol
from xrun_harness.protocol import COMMANDS, encode_event, parse_command, read_line

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "testdata", "protocol")
EVENTS = {c.event: c for c in (protocol.Ready, protocol.Models, protocol.FirstCall, protocol.Correctness,
                               protocol.Samples, protocol.Profiled, protocol.ErrorEvent)}


def lines(name):
    with open(os.path.join(GOLDEN, name)) as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def test_every_golden_command_parses_with_every_field_read():
    ops = set()
    for line in lines("commands.jsonl"):
        obj = read_line(line)
        cmd = parse_command(obj)
        ops.add(cmd.op)
        names = {f.name for f in dataclasses.fields(cmd)}
        # A field the runner writes that the harness does not read, or one
        # the harness reads that the runner never writes, is drift.
        assert set(obj) - {"op", "id"} == names, (cmd.op, sorted(set(obj) ^ (names | {"op", "id"})))
    assert ops == set(COMMANDS)


def build(cls, obj):
    """An instance of the event dataclass cls from a golden line's object."""
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in obj:
            continue
        kwargs[f.name] = value(hints[f.name], obj[f.name])
    return cls(**kwargs)


def value(hint, v):
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is typing.Union and len(args) == 1:
        return value(args[0], v)
    if dataclasses.is_dataclass(hint):
        return build(hint, v)
    if typing.get_origin(hint) is list and args and dataclasses.is_dataclass(args[0]):
        return [build(args[0], x) for x in v]
    return v


def test_the_harness_writes_each_golden_event():
    kinds = set()
    for line in lines("events.jsonl"):
        obj = json.loads(line)
        cls = EVENTS[obj["event"]]
        kinds.add(obj["event"])
        assert encode_event(build(cls, obj), obj["id"]) == line + "\n"
    assert kinds == set(EVENTS)


def test_golden_events_set_every_field():
    # Every field of every event appears in its golden line, so that the
    # runner's side (golden_test.go) checks that it reads each one.
    for line in lines("events.jsonl"):
        obj = json.loads(line)
        names = {f.name for f in dataclasses.fields(EVENTS[obj["event"]])}
        assert names <= set(obj), (obj["event"], sorted(names - set(obj)))
