"""The protocol's messages (PROTOCOL.md beside this package): commands read
from the runner's JSON lines into dataclasses, events written back as JSON
lines.

Defaults are defined once. A command field the runner always sends (its Go
struct has no `omitempty` for it) is required here and has no default: the
runner owns its value (the warm-up, the sample budget, the seeds). Every
other field has its one default below, which is also what its zero value
means, so a field the runner leaves out and one it sends as 0 or false read
the same.
"""

import json
import math
import sys
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from typing import Any, Dict, List, Optional

PROTOCOL_VERSION = 1
FLOAT_MAX = sys.float_info.max


class CommandError(ValueError):
    """A command the harness cannot read: not JSON, an unknown op, or a
    field missing or of the wrong type."""


def finite(x):
    """Clamps a number so that it is valid JSON: NaN becomes 0, an infinity
    the largest float of its sign."""
    x = float(x)
    if math.isnan(x):
        return 0.0
    if math.isinf(x):
        return FLOAT_MAX if x > 0 else -FLOAT_MAX
    return x


# -- field readers: each takes a JSON value and returns it typed, or raises
# TypeError with what it wanted.

def _text(v):
    if not isinstance(v, str):
        raise TypeError("a string")
    return v


def _flag(v):
    if not isinstance(v, bool):
        raise TypeError("true or false")
    return v


def _integer(v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("an integer")
    return v


def _number(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError("a number")
    return float(v)


def _device(v):
    if v not in ("cuda", "cpu"):
        raise TypeError('"cuda" or "cpu"')
    return v


def _object(v):
    # The runner's json.RawMessage and maps are null when unset.
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise TypeError("an object")
    return v


def _refs(v):
    v = _object(v)
    if not all(isinstance(r, str) for r in v.values()):
        raise TypeError('an object of "module:callable" strings')
    return v


def _seeds(v):
    if v is None:
        return []
    if not isinstance(v, list):
        raise TypeError("a list of integers")
    return [_integer(s) for s in v]


def _tolerance(v):
    if v is None:
        return None
    return Tolerance.parse("tolerance", _object(v))


def required(read):
    """A field the runner always sends: no default."""
    return field(metadata={"read": read})


def optional(read, default=None, factory=None):
    """A field the runner may leave out, with its one default."""
    if factory is not None:
        return field(default_factory=factory, metadata={"read": read})
    return field(default=default, metadata={"read": read})


class Message:
    """Reads a dataclass of required and optional fields from a JSON object.
    Unknown fields are ignored (PROTOCOL.md); null in an optional field is
    its default."""

    @classmethod
    def parse(cls, what, obj):
        kw = {}
        for f in fields(cls):
            has_default = f.default is not MISSING or f.default_factory is not MISSING
            if f.name not in obj or (obj[f.name] is None and has_default):
                if not has_default:
                    raise CommandError("%s: %s is missing" % (what, f.name))
                continue
            try:
                kw[f.name] = f.metadata["read"](obj[f.name])
            except TypeError as e:
                raise CommandError("%s: %s must be %s, not %s" % (what, f.name, e, json.dumps(obj[f.name])[:80])) from None
        return cls(**kw)


@dataclass(frozen=True)
class Tolerance(Message):
    """|out - ref| <= atol + rtol * |ref|."""
    atol: float = required(_number)
    rtol: float = required(_number)


# -- commands ------------------------------------------------------------

@dataclass(frozen=True)
class Init(Message):
    op = "init"
    impl: str = required(_text)
    device: str = required(_device)
    flush: bool = required(_flag)
    fn: str = optional(_text, "")
    reference: str = optional(_text, "")
    inputs: str = optional(_text, "")
    metrics: str = optional(_text, "")
    models: Dict[str, str] = optional(_refs, factory=dict)
    flush_bytes: int = optional(_integer, 0)  # 0: max(256 MiB, 4 x L2)
    impl_params: Dict[str, Any] = optional(_object, factory=dict)
    cuda_graph: bool = optional(_flag, False)
    kernel_clock: bool = optional(_flag, False)
    profile: bool = optional(_flag, False)


@dataclass(frozen=True)
class ModelsCmd(Message):
    op = "models"
    params: Dict[str, Any] = required(_object)


@dataclass(frozen=True)
class Check(Message):
    op = "check"
    params: Dict[str, Any] = required(_object)
    seeds: List[int] = required(_seeds)
    tolerance: Optional[Tolerance] = required(_tolerance)  # null: each output dtype's default


@dataclass(frozen=True)
class First(Message):
    """The implementation's first call at a case, made while no other
    worker uses the GPU: where Triton autotunes and torch.compile compiles."""
    op = "first"
    params: Dict[str, Any] = required(_object)
    seed: int = required(_integer)
    warm_ms: float = optional(_number, 0.0)  # 0: no warming
    check_configs: int = optional(_integer, 0)  # 0: no check of the autotuners' choices
    check_rounds: int = optional(_integer, 0)
    check_budget_ms: float = optional(_number, 0.0)
    check_wall_ms: float = optional(_number, 0.0)  # 0: no limit on the rounds' wall time
    flush: bool = optional(_flag, False)
    rest_ratio: float = optional(_number, 0.0)
    kernel_clock_max_ms: float = optional(_number, 0.0)


@dataclass(frozen=True)
class Time(Message):
    op = "time"
    params: Dict[str, Any] = required(_object)
    seed: int = required(_integer)
    min_samples: int = required(_integer)
    budget_ms: float = required(_number)
    warmup_ms: float = required(_number)
    flush: bool = required(_flag)
    max_samples: int = optional(_integer, 0)  # 0: timing.SAMPLE_CAP
    wall_ms: float = optional(_number, 0.0)  # 0: 4 x budget_ms
    rest_ratio: float = optional(_number, 0.0)
    kernel_clock_max_ms: float = optional(_number, 0.0)  # 0: no limit


@dataclass(frozen=True)
class Profile(Message):
    op = "profile"
    params: Dict[str, Any] = required(_object)
    seed: int = required(_integer)
    label: str = required(_text)


@dataclass(frozen=True)
class Exit(Message):
    op = "exit"


COMMANDS = {c.op: c for c in (Init, ModelsCmd, First, Check, Time, Profile, Exit)}


def read_line(line):
    """The JSON object of one command line."""
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise CommandError("a command line is not JSON: %s" % e) from None
    if not isinstance(obj, dict):
        raise CommandError("a command line is a JSON object, not %s" % type(obj).__name__)
    return obj


def parse_command(obj):
    """The typed command of a command line's object (read_line)."""
    op = obj.get("op")
    cls = COMMANDS.get(op)
    if cls is None:
        known = ", ".join(o for o in COMMANDS if o != "exit")
        raise CommandError("unknown op %r; known: %s, exit" % (op, known))
    return cls.parse(op, obj)


# -- events: None fields are left out of the line ------------------------

@dataclass
class Device:
    kind: str
    name: str
    index: Optional[int] = None
    compute_capability: Optional[str] = None
    sm_count: Optional[int] = None
    l2_bytes: Optional[int] = None
    memory_bytes: Optional[int] = None
    uuid: Optional[str] = None


@dataclass
class Ready:
    event = "ready"
    pid: int
    python: str
    numpy: str
    torch: str
    triton: str
    cuda: str
    timer: str
    device: Device
    flush_bytes: int = 0
    protocol: int = PROTOCOL_VERSION
    timer_floor_ms: Optional[float] = None
    kernel_clock: Optional[str] = None
    launch_ms: Optional[float] = None
    kernel_clock_note: Optional[str] = None
    # How the kernel clock reads CUPTI: "activity" (its activity API) or
    # "profiler" (torch's profiler).
    kernel_clock_reader: Optional[str] = None
    # What init spent its time on, in ms: imports, the experiment's code,
    # the CUDA context, the flush buffer, the spin and hold kernels, the
    # timer floor, the kernel clock.
    init_ms: Optional[Dict[str, float]] = None


@dataclass
class Models:
    event = "models"
    flops: Optional[float] = None
    bytes: Optional[float] = None
    tokens: Optional[float] = None
    metrics: Optional[Dict[str, float]] = None


@dataclass
class Autotuned:
    """One autotuned kernel's config in the first call (autotune.Recorder)."""
    kernel: str
    kind: str  # "triton" or "inductor"
    config: str  # autotune.config_label
    params: Dict[str, Any]
    source: str  # tuned, cache, reused or single
    key: Optional[str] = None
    tuning_ms: Optional[float] = None
    timings_ms: Optional[Dict[str, float]] = None
    check: Optional[Dict[str, Any]] = None  # tunecheck.Check.record()


@dataclass
class Warm:
    """What warming the GPU before a first call did (gpu.warm)."""
    ms: float
    first_call_ms: float
    last_call_ms: float


@dataclass
class FirstCall:
    event = "first"
    ms: float  # the call's wall time, synchronized
    autotune: Optional[List[Autotuned]] = None
    warm: Optional[Warm] = None


@dataclass
class Correctness:
    event = "correctness"
    passed: bool
    trials: int
    seeds: List[int]
    max_abs_error: float
    max_rel_error: float
    rms_rel_error: float
    mismatch_fraction: float
    nan_mismatches: int
    inf_mismatches: int
    inputs_modified: bool
    replayed: bool
    tolerance: Tolerance
    dtype: str
    reason: str


@dataclass
class Samples:
    event = "samples"
    samples_ms: List[float]
    warmup_calls: int
    warmup_ms: float
    timer: str
    sampling_ms: float
    # GPU only.
    discarded: Optional[int] = None
    cover: Optional[str] = None
    cover_note: Optional[str] = None
    spin_ms: Optional[float] = None
    # The kernel clock's reading of the batch (gpu.kernelclock.Reading).
    kernel_ms: Optional[List[float]] = None
    busy_ms: Optional[List[float]] = None
    kernels: Optional[int] = None
    launch_gaps_ms: Optional[List[float]] = None
    kernel_note: Optional[str] = None


@dataclass
class Profiled:
    event = "profiled"


@dataclass
class ErrorEvent:
    event = "error"
    kind: str
    where: str
    type: str
    message: str
    traceback: str


def _plain(x):
    if is_dataclass(x):
        return {f.name: _plain(getattr(x, f.name)) for f in fields(x) if getattr(x, f.name) is not None}
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def encode_event(ev, cid):
    """One event line, answering command cid. NaN and Infinity are refused
    (they are not JSON): figures that may be non-finite go through finite()."""
    obj = {"event": ev.event}
    obj.update(_plain(ev))
    obj["id"] = cid
    return json.dumps(obj, allow_nan=False, separators=(",", ":")) + "\n"
