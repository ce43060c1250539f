"""xrun harness: runs one implementation of an experiment for the runner.

The runner starts one harness process per implementation. Commands arrive as
JSON lines on fd 3 and events leave as JSON lines on fd 4 (XRUN_CMD_FD and
XRUN_EVENT_FD override them); stdout and stderr belong to the experiment's
code, which may print freely. PROTOCOL.md beside this file documents every
command and event.

Requires Python >= 3.9 and numpy; torch (CPU or CUDA) and triton are optional.
"""

import copy
import faulthandler
import gc
import hashlib
import importlib
import inspect
import json
import math
import os
import platform
import sys
import time
import traceback

PROTOCOL_VERSION = 1
MIB = 1 << 20

# Default tolerances by output dtype: |out - ref| <= atol + rtol * |ref|.
DEFAULT_TOLERANCE = {
    "float64": 1e-7,
    "complex128": 1e-7,
    "float32": 1e-4,
    "complex64": 1e-4,
    "float16": 1e-2,
    "bfloat16": 1e-2,
}
FP8_TOLERANCE = 1e-1
FLOAT_MAX = sys.float_info.max

np = None
torch = None


# The hold kernel: one thread that waits until the host writes a non-zero
# word into pinned host memory (and at least min_ns have passed), or until
# max_ns have passed. PTX, so that the driver compiles it for any GPU with no
# compiler installed; %globaltimer is the GPU's nanosecond clock. Beside it,
# the mark kernel, which does nothing: launched after the end event, it
# closes a call's window in the kernel clock's records; and the touch
# kernel, which writes one word: back to back, its launches measure the
# GPU's cost of one launch.
HOLD_PTX = b"""
.version 6.0
.target sm_50
.address_size 64

.visible .entry xrun_hold(.param .u64 flag, .param .u64 min_ns, .param .u64 max_ns)
{
    .reg .pred %p<3>;
    .reg .b32 %r<2>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [flag];
    ld.param.u64 %rd2, [min_ns];
    ld.param.u64 %rd3, [max_ns];
    mov.u64 %rd4, %globaltimer;
WAIT:
    mov.u64 %rd5, %globaltimer;
    sub.u64 %rd6, %rd5, %rd4;
    setp.ge.u64 %p1, %rd6, %rd3;
    @%p1 bra DONE;
    setp.lt.u64 %p2, %rd6, %rd2;
    @%p2 bra WAIT;
    ld.volatile.u32 %r1, [%rd1];
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra WAIT;
DONE:
    ret;
}

.visible .entry xrun_mark()
{
    ret;
}

.visible .entry xrun_touch(.param .u64 word)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<3>;

    ld.param.u64 %rd1, [word];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, 1;
    st.global.u32 [%rd2], %r1;
    ret;
}
\0"""
HOLD_NAME, MARK_NAME, TOUCH_NAME = "xrun_hold", "xrun_mark", "xrun_touch"


class Hold:
    """Keeps a stream waiting until the host lets it go.

    arm() sets the flag to 0 and launches the hold kernel; release() sets
    it to 1. Between the two the host enqueues the start event, the call and
    the end event, so the GPU reaches the start event only when everything
    it times is already queued behind it, however long the host took: no
    idle gap inside the timed region, and no spin length to guess (the
    blocking kernel of nvbench). Uses the CUDA driver through ctypes, in the
    context torch made current.
    """

    def __init__(self):
        import ctypes
        self.ct = ctypes
        lib = ctypes.CDLL("libcuda.so.1")
        self.lib = lib
        vp, u32 = ctypes.c_void_p, ctypes.c_uint
        lib.cuLaunchKernel.argtypes = [vp, u32, u32, u32, u32, u32, u32, u32, vp,
                                       ctypes.POINTER(vp), ctypes.POINTER(vp)]
        self.check(lib.cuInit(0), "cuInit")
        ctx = vp()
        self.check(lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:
            raise RuntimeError("no current CUDA context")
        self.module = vp()
        self.check(lib.cuModuleLoadData(ctypes.byref(self.module), HOLD_PTX), "cuModuleLoadData")
        self.fn, self.mark_fn, self.touch_fn = vp(), vp(), vp()
        for fn, name in ((self.fn, HOLD_NAME), (self.mark_fn, MARK_NAME), (self.touch_fn, TOUCH_NAME)):
            self.check(lib.cuModuleGetFunction(ctypes.byref(fn), self.module, name.encode()), "cuModuleGetFunction")
        self.host = vp()
        self.check(lib.cuMemHostAlloc(ctypes.byref(self.host), ctypes.c_size_t(64), u32(0x02)), "cuMemHostAlloc")
        dptr = ctypes.c_uint64()
        self.check(lib.cuMemHostGetDevicePointer_v2(ctypes.byref(dptr), self.host, u32(0)), "cuMemHostGetDevicePointer")
        self.flag = ctypes.c_uint32.from_address(self.host.value)
        self.args = (ctypes.c_uint64 * 3)(dptr.value, 0, 0)
        size = ctypes.sizeof(ctypes.c_uint64)
        self.params = (vp * 3)(*[ctypes.addressof(self.args) + i * size for i in range(3)])
        self.word = ctypes.c_uint64(0)
        self.touch_params = (vp * 1)(ctypes.addressof(self.word))

    def check(self, rc, what):
        if rc != 0:
            name = self.ct.c_char_p()
            self.lib.cuGetErrorName(rc, self.ct.byref(name))
            raise RuntimeError("%s: %s" % (what, (name.value or b"CUresult %d" % rc).decode()))

    def arm(self, stream, min_ms, max_ms):
        """Launches the hold on stream (a CUstream handle): it ends once
        released and min_ms have passed, or after max_ms."""
        self.flag.value = 0
        self.args[1] = int(min_ms * 1e6)
        self.args[2] = int(max_ms * 1e6)
        self.check(self.lib.cuLaunchKernel(self.fn, 1, 1, 1, 1, 1, 1, 0, stream, self.params, None), "cuLaunchKernel")

    def release(self):
        self.flag.value = 1

    def mark(self, stream):
        """Launches the mark kernel (it does nothing) on stream."""
        self.check(self.lib.cuLaunchKernel(self.mark_fn, 1, 1, 1, 1, 1, 1, 0, stream, None, None), "cuLaunchKernel")

    def touch(self, stream, address):
        """Launches the touch kernel on stream: it writes 1 to the device word at address."""
        self.word.value = address
        self.check(self.lib.cuLaunchKernel(self.touch_fn, 1, 1, 1, 1, 1, 1, 0, stream, self.touch_params, None),
                   "cuLaunchKernel")


class KernelClock:
    """The GPU's own record of the kernels it ran: CUPTI's kernel, memory
    copy and memory set records, read through torch's profiler (kineto).

    Beside the event pair, a second clock for the same samples. Two CUDA
    events around a call also count the GPU's processing of the events and
    the launch between them and the kernel (about 2.3 us on an H100, 15% or
    more of a kernel of a few microseconds); CUPTI's records time each
    kernel from its start to its end with a 32 ns resolution. A call's
    window is the records launched between the hold kernel and the mark
    kernel that follows its end event (by CUPTI's correlation ids, which
    number the launches in the order they were made, on any stream).

    start() and stop() bracket a batch of samples; stop() returns the GPU
    records as (correlation id, name, start ns, end ns), sorted by
    correlation id.
    """

    def __init__(self):
        from torch.autograd import profiler as ap
        from torch._C._autograd import DeviceType
        self.ap = ap
        try:
            prof = ap.profile(use_device="cuda")
        except TypeError:  # torch before use_device
            prof = ap.profile(use_cuda=True)
        self.config = prof.config()
        self.activities = {torch.autograd.ProfilerActivity.CUDA}
        self.cuda = DeviceType.CUDA
        self.on = False

    def start(self):
        # Each batch prepares again: enabling a profiler that was disabled
        # without it crashes (torch 2.11).
        self.ap._prepare_profiler(self.config, self.activities)
        self.ap._enable_profiler(self.config, self.activities)
        self.on = True

    def stop(self):
        self.on = False
        res = self.ap._disable_profiler()
        cuda = self.cuda
        out = [(e.correlation_id(), e.name(), e.start_ns(), e.end_ns()) for e in res.events() if e.device_type() == cuda]
        out.sort()
        return out

    def abandon(self):
        """Stops a batch that failed, ignoring its records."""
        if self.on:
            self.on = False
            try:
                self.ap._disable_profiler()
            except Exception:  # noqa: B902 - nothing to save
                pass


def call_windows(records):
    """Splits GPU records (sorted by correlation id) into calls: the records
    launched after each hold kernel and before the mark kernel that follows
    it. Per call, (span ms, busy ms, records) where span runs from the first
    record's start to the last one's end and busy sums their durations, or
    None for a call that ran nothing on the GPU. Records outside a window
    (the L2 flush, launches made while no sample was being taken) are left
    out; so is a hold without a mark (a sample cut short)."""
    out = []
    cur = None
    for _, name, start, end in records:
        if name == HOLD_NAME:
            cur = []
        elif name == MARK_NAME:
            if cur is None:
                continue
            if cur:
                out.append(((max(e for _, e in cur) - min(s for s, _ in cur)) / 1e6,
                            sum(e - s for s, e in cur) / 1e6, len(cur)))
            else:
                out.append(None)
            cur = None
        elif cur is not None:
            cur.append((start, end))
    return out


def hold_max_ms(enqueue_ms):
    """How long the hold kernel waits for the host's release before it
    times out: a call that takes 20 ms to enqueue is slow Python, not a
    wait for the GPU, and the cap bounds what 3 time-outs cost."""
    return min(max(10.0 * enqueue_ms, 20.0), 500.0)


def iq_mean(xs):
    """The mean of the middle half of xs (the interquartile mean)."""
    xs = sorted(xs)
    q = len(xs) // 4
    mid = xs[q:len(xs) - q] or xs
    return sum(mid) / len(mid)


def launch_gaps(records):
    """Gaps (ms) between consecutive touch kernels in GPU records: the
    front end's cost of one launch, which CUPTI's kernel records (unlike
    Nsight Compute's gpu__time_duration) leave out of every kernel."""
    touches = sorted((s, e) for _, name, s, e in records if name == TOUCH_NAME)
    return [(touches[i + 1][0] - touches[i][1]) / 1e6 for i in range(len(touches) - 1)]


class StageError(Exception):
    """An exception raised by experiment code, tagged with where it happened."""

    def __init__(self, where, exc):
        super().__init__(str(exc))
        self.where = where
        self.exc = exc


def stage(where, f, *args, **kwargs):
    try:
        return f(*args, **kwargs)
    except StageError:
        raise
    except BaseException as e:  # noqa: B902 - experiment code may raise anything
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        raise StageError(where, e) from e


def classify(exc):
    """Maps an exception to an error kind: oom, cuda, import or exception."""
    name = type(exc).__name__
    msg = str(exc)
    low = msg.lower()
    if name == "OutOfMemoryError" or isinstance(exc, MemoryError) or "out of memory" in low:
        return "oom"
    if name in ("AcceleratorError", "CudaError") or "cuda error" in low or "illegal memory access" in low \
            or "device-side assert" in low or "cudaerror" in low or "an illegal instruction" in low:
        return "cuda"
    if isinstance(exc, ImportError):
        return "import"
    return "exception"


def finite(x):
    """Clamps a float so that it is valid JSON (no NaN or Infinity)."""
    x = float(x)
    if math.isnan(x):
        return 0.0
    if math.isinf(x):
        return FLOAT_MAX if x > 0 else -FLOAT_MAX
    return x


def resolve(spec, what):
    """Imports "module:attr.attr" and returns the object."""
    if not spec:
        return None
    mod_name, _, attr = spec.partition(":")
    try:
        obj = importlib.import_module(mod_name)
    except BaseException as e:
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        raise StageError(what, e) from e
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as e:
            err = ImportError("%s: module %r has no attribute %r" % (spec, mod_name, part))
            raise StageError(what, err) from e
    if not callable(obj):
        raise StageError(what, ImportError("%s is not callable" % spec))
    return obj


def positional_arity(f):
    """Number of positional parameters f accepts (inf with *args)."""
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return 1
    n = 0
    for p in sig.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            return math.inf
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n += 1
    return n


def is_tensor(x):
    return torch is not None and isinstance(x, torch.Tensor)


def clone(x):
    """Deep copy of inputs: tensors and arrays are copied, not shared."""
    if is_tensor(x):
        return x.detach().clone()
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[clone(v) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(clone(v) for v in x)
    if isinstance(x, dict):
        return {k: clone(v) for k, v in x.items()}
    return copy.deepcopy(x)


def bitwise_equal(a, b):
    """True when a and b hold the same bits (NaN-safe), recursively."""
    if is_tensor(a) or is_tensor(b):
        if not (is_tensor(a) and is_tensor(b)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
            return False
        if a.numel() == 0:
            return True
        return bool(torch.equal(as_bytes(a), as_bytes(b)))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(bitwise_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(bitwise_equal(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b)
    except Exception:  # objects without a usable ==
        return a is b


def as_bytes(t):
    t = t.detach().reshape(-1).contiguous()
    if t.dtype == torch.bool:
        return t.to(torch.uint8)
    return t.view(torch.uint8)


def dtype_name(x):
    if is_tensor(x):
        return str(x.dtype).replace("torch.", "")
    if isinstance(x, np.ndarray):
        return x.dtype.name
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int64"
    if isinstance(x, float):
        return "float64"
    if isinstance(x, complex):
        return "complex128"
    if isinstance(x, np.generic):
        return x.dtype.name
    return type(x).__name__


def flatten(x, path="output", out=None):
    """Flattens an output into [(path, leaf)]; leaves are tensors, arrays or numbers."""
    if out is None:
        out = []
    if is_tensor(x) or isinstance(x, (np.ndarray, np.generic, bool, int, float, complex)) or x is None:
        out.append((path, x))
    elif isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            flatten(v, "%s[%d]" % (path, i), out)
    elif isinstance(x, dict):
        for k in sorted(x, key=str):
            flatten(x[k], "%s[%r]" % (path, k), out)
    else:
        raise TypeError("%s is a %s; outputs must be tensors, arrays, numbers, or tuples/lists/dicts of them"
                        % (path, type(x).__name__))
    return out


def to_float64(x):
    """A host numpy copy of a leaf in float64 (complex128 for complex)."""
    if is_tensor(x):
        t = x.detach()
        if t.is_complex():
            return t.to(device="cpu", dtype=torch.complex128).numpy()
        return t.to(device="cpu", dtype=torch.float64).numpy()
    a = np.asarray(x)
    if np.iscomplexobj(a):
        return a.astype(np.complex128)
    return a.astype(np.float64)


def default_tolerance(dtype):
    if dtype in DEFAULT_TOLERANCE:
        return DEFAULT_TOLERANCE[dtype]
    if dtype.startswith("float8"):
        return FP8_TOLERANCE
    return 0.0  # integers and booleans must match exactly


class Stats:
    """Worst-case error figures accumulated over outputs and seeds."""

    def __init__(self):
        self.max_abs = 0.0
        self.max_rel = 0.0
        self.rms_rel = 0.0
        self.mismatched = 0
        self.elements = 0
        self.nan = 0
        self.inf = 0
        self.atol = 0.0
        self.rtol = 0.0
        self.reasons = []

    def fail(self, reason):
        if reason not in self.reasons:
            self.reasons.append(reason)

    def compare(self, path, out, ref, tol):
        od, rd = dtype_name(out), dtype_name(ref)
        if out is None or ref is None:
            if not (out is None and ref is None):
                self.fail("%s is %s, the reference's is %s" % (path, "None" if out is None else od,
                                                               "None" if ref is None else rd))
            return
        tol_dtype = rd
        if od != rd:
            # A reference may compute in more precision than the version under
            # test (float32 against bf16, say): the comparison is in float64
            # either way, and the tolerance is that of the less precise dtype.
            if not (is_float_dtype(od) and is_float_dtype(rd)):
                self.fail("%s has dtype %s, the reference's has %s" % (path, od, rd))
                return
            tol_dtype = od if FLOAT_PRECISION.get(od, 0) <= FLOAT_PRECISION.get(rd, 0) else rd
        if tuple(getattr(out, "shape", ())) != tuple(getattr(ref, "shape", ())):
            self.fail("%s has shape %s, the reference's has %s" % (path, list(getattr(out, "shape", ())),
                                                                   list(getattr(ref, "shape", ()))))
            return
        if tol is None:
            atol = rtol = default_tolerance(tol_dtype)
        else:
            atol, rtol = float(tol.get("atol", 0.0)), float(tol.get("rtol", 0.0))
        self.atol, self.rtol = max(self.atol, atol), max(self.rtol, rtol)
        if is_tensor(out) and is_tensor(ref):
            m = torch_error_figures(out, ref.to(out.device), atol, rtol)
        else:
            m = numpy_error_figures(to_float64(out), to_float64(ref), atol, rtol)
        n, nan_mis, inf_mis, max_abs, max_rel, num2, den2, bad_fin = m
        self.elements += n
        if n == 0:
            return
        self.nan += nan_mis
        self.inf += inf_mis
        self.max_abs = max(self.max_abs, finite(max_abs))
        self.max_rel = max(self.max_rel, finite(max_rel))
        tiny = np.finfo(np.float64).tiny
        num, den = math.sqrt(finite(num2)), math.sqrt(finite(den2))
        self.rms_rel = max(self.rms_rel, finite(num / max(den, tiny)) if num > 0 else 0.0)
        bad = nan_mis + inf_mis + bad_fin
        self.mismatched += bad
        if nan_mis:
            self.fail("%s: %d NaN positions differ from the reference" % (path, nan_mis))
        if inf_mis:
            self.fail("%s: %d Inf positions differ from the reference" % (path, inf_mis))
        if bad_fin:
            self.fail("%s: %d of %d elements outside atol=%g rtol=%g" % (path, bad_fin, n, atol, rtol))


# Significand bits of the floating dtypes, to pick the less precise of two.
FLOAT_PRECISION = {"float64": 53, "float32": 24, "tfloat32": 11, "float16": 11, "bfloat16": 8,
                   "float8_e4m3fn": 4, "float8_e4m3fnuz": 4, "float8_e5m2": 3, "float8_e5m2fnuz": 3,
                   "complex128": 53, "complex64": 24}


def is_float_dtype(name):
    return name in FLOAT_PRECISION


def numpy_error_figures(o, r, atol, rtol):
    """(elements, NaN mismatches, Inf mismatches, max abs, max rel, sum d^2,
    sum ref^2, finite elements outside tolerance) on host float64 arrays."""
    n = o.size
    if n == 0:
        return 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0
    o, r = o.reshape(-1), r.reshape(-1)
    on, rn = np.isnan(o), np.isnan(r)
    nan_mis = int(np.count_nonzero(on != rn))
    oi, ri = np.isinf(o), np.isinf(r)
    with np.errstate(invalid="ignore"):
        inf_mis = int(np.count_nonzero((oi | ri) & ~(on | rn) & ~(o == r)))
    fin = np.isfinite(o) & np.isfinite(r)
    if not fin.any():
        return n, nan_mis, inf_mis, 0.0, 0.0, 0.0, 0.0, 0
    of, rf = o[fin], r[fin]
    with np.errstate(over="ignore", invalid="ignore"):
        d = np.abs(of - rf)
        ar = np.abs(rf)
        tiny = np.finfo(np.float64).tiny
        return (n, nan_mis, inf_mis, float(d.max()), float((d / np.maximum(ar, tiny)).max()),
                float(np.sum(np.square(d))), float(np.sum(np.square(ar))),
                int(np.count_nonzero(d > atol + rtol * ar)))


def torch_error_figures(out, ref, atol, rtol):
    """The same figures as numpy_error_figures, computed on the tensors'
    device in float64: large GPU outputs never travel to the host."""
    n = out.numel()
    if n == 0:
        return 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0
    wide = torch.complex128 if (out.is_complex() or ref.is_complex()) else torch.float64
    o = out.detach().reshape(-1).to(wide)
    r = ref.detach().reshape(-1).to(wide)
    on, rn = torch.isnan(o), torch.isnan(r)
    nan_mis = int((on != rn).sum().item())
    oi, ri = torch.isinf(o), torch.isinf(r)
    inf_mis = int(((oi | ri) & ~(on | rn) & ~(o == r)).sum().item())
    fin = torch.isfinite(o) & torch.isfinite(r)
    if not bool(fin.any().item()):
        return n, nan_mis, inf_mis, 0.0, 0.0, 0.0, 0.0, 0
    of, rf = o[fin], r[fin]
    del o, r, on, rn, oi, ri, fin
    d = (of - rf).abs()
    ar = rf.abs()
    tiny = float(np.finfo(np.float64).tiny)
    return (n, nan_mis, inf_mis, float(d.max().item()), float((d / ar.clamp(min=tiny)).max().item()),
            float(d.square().sum().item()), float(ar.square().sum().item()),
            int((d > atol + rtol * ar).sum().item()))


def device_sums(t):
    """Two sums over a GPU tensor's bytes read as 64-bit words (wrapping):
    of the words and of their squares. They stand for the bytes in digest:
    equal for equal bytes, and for different outputs equal with a chance
    of about 2^-128. Computed where the tensor is: hashing a 512 MiB output
    on the host took a second of each seed's check."""
    b = as_bytes(t)
    pad = (-b.numel()) % 8
    if pad:
        b = torch.cat([b, b.new_zeros(pad)])
    w = b.view(torch.int64)
    return [int(w.sum().item()), int((w * w).sum().item())]


def digest(leaves):
    """A hash of the outputs' exact bytes (host tensors and arrays as raw
    bytes; GPU tensors through device_sums, so that nothing large travels
    to the host)."""
    h = hashlib.sha256()
    for path, x in leaves:
        h.update(path.encode())
        h.update(dtype_name(x).encode())
        if x is None:
            h.update(b"None")
            continue
        if is_tensor(x):
            h.update(repr(tuple(x.shape)).encode())
            if x.numel() and x.is_cuda:
                h.update(repr(device_sums(x)).encode())
            elif x.numel():
                h.update(as_bytes(x).cpu().numpy().tobytes())
            continue
        a = np.ascontiguousarray(to_float64(x))
        h.update(repr(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def split_inputs(x):
    """inputs(...) may return a tuple/list (positional) or a dict (keyword)."""
    if isinstance(x, dict):
        return (), dict(x)
    if isinstance(x, (list, tuple)):
        return tuple(x), {}
    return (x,), {}


def flush_readers(buf):
    """Ways to read every byte of buf (int32, a multiple of 8 bytes) in one
    reduction kernel. How fast each one goes depends on torch's kernels:
    summing int32 into int64 read an H100's 256 MiB at 0.5 TB/s, summing
    the same bytes as float32 at memory speed."""
    f32 = torch.zeros((), dtype=torch.float32, device=buf.device)
    i32 = torch.zeros((), dtype=torch.int32, device=buf.device)
    i64 = torch.zeros((), dtype=torch.int64, device=buf.device)
    as_f32, as_i64 = buf.view(torch.float32), buf.view(torch.int64)
    return [
        lambda: torch.sum(as_f32, 0, out=f32),
        lambda: torch.amax(buf, 0, out=i32),
        lambda: torch.sum(as_i64, 0, out=i64),
        lambda: torch.sum(buf, 0, dtype=torch.int64, out=i64),
    ]


def fastest(fs, reps=3):
    """The callable among fs with the shortest GPU time (best of reps);
    ones that raise are left out."""
    best, pick = math.inf, None
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    for f in fs:
        try:
            f()
            for _ in range(reps):
                torch.cuda.synchronize()
                a.record()
                f()
                b.record()
                torch.cuda.synchronize()
                t = a.elapsed_time(b)
                if t < best:
                    best, pick = t, f
        except RuntimeError:
            continue
    if pick is None:
        raise StageError("harness", RuntimeError("no way to read the L2 flush buffer worked"))
    return pick


class Harness:
    def __init__(self, events):
        self.events = events
        self.cuda = False
        self.fn = None
        self.reference = None
        self.inputs = None
        self.models = {}
        self.metrics = None
        self.impl = ""
        self.impl_params = {}
        self.flush_buf = None
        self.flush_bytes = 0
        self.cuda_graph = False
        self.time_key = None
        self.time_inputs = None
        self.warmed = False
        self.graph = None
        self.sleep_cycles_per_ms = 0.0
        self.sleep_ms = 0.0
        self.flush_l2 = None  # reads the whole flush buffer
        self.spin_cycles = 0  # the longest spin a gap has called for so far
        self.spin_taken = 0  # samples and early starts since the spin last changed
        self.spin_early = 0
        self.hold = None  # Hold, or None and hold_note says why
        self.hold_note = ""
        self.hold_timeouts = 0
        self.uncovered = False  # the call waits for the GPU: nothing can run ahead of it
        self.kclock = None  # KernelClock, or None and kclock_note says why
        self.kclock_note = ""
        self.launch_ms = 0.0
        self.long_call = None  # for time_key: why its calls skip the kernel clock ("" when they do not)

    # -- plumbing ---------------------------------------------------------

    def send(self, ev):
        self.events.write(json.dumps(ev, allow_nan=False, separators=(",", ":")) + "\n")
        self.events.flush()

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def params(self, c):
        p = dict(c.get("params") or {})
        p["device"] = "cuda" if self.cuda else "cpu"
        return p

    def make_inputs(self, params, seed):
        if self.inputs is None:
            raise StageError("inputs", ValueError("the spec names no inputs callable"))
        return split_inputs(stage("inputs", self.inputs, params, seed))

    def call(self, f, args, kwargs, where, extra=None):
        if extra:
            kw = dict(kwargs)
            kw.update(extra)
            return stage(where, f, *args, **kw)
        return stage(where, f, *args, **kwargs)

    # -- ops ----------------------------------------------------------------

    def op_init(self, c):
        global np, torch
        try:
            import numpy
        except ImportError as e:
            raise StageError("harness", ImportError("the xrun harness needs numpy: %s" % e)) from e
        np = numpy
        device = c.get("device") or "cpu"
        if device == "cuda":
            try:
                import torch as _torch
            except ImportError as e:
                raise StageError("harness", ImportError("device cuda needs torch: %s" % e)) from e
            torch = _torch
            if not torch.cuda.is_available():
                raise StageError("harness", RuntimeError("CUDA error: torch %s sees no CUDA device" % torch.__version__))
            self.cuda = True
        self.impl = c.get("impl") or ""
        self.impl_params = dict(c.get("impl_params") or {})
        self.cuda_graph = bool(c.get("cuda_graph")) and self.cuda
        # A worker that Nsight Compute profiles only runs calls: no flush
        # buffer, no hold, and no CUPTI of its own (ncu is using it).
        profiling = bool(c.get("profile"))
        self.inputs = resolve(c.get("inputs"), "inputs")
        self.reference = resolve(c.get("reference"), "reference")
        self.fn = resolve(c.get("fn"), "fn")
        for k, v in (c.get("models") or {}).items():
            self.models[k] = resolve(v, k)
        self.metrics = resolve(c.get("metrics"), "metrics")
        refresh_torch()

        ev = {"event": "ready", "protocol": PROTOCOL_VERSION, "pid": os.getpid(),
              "python": platform.python_version(), "numpy": np.__version__,
              "torch": torch.__version__ if torch is not None else package_version("torch"),
              "triton": package_version("triton"), "cuda": "",
              "timer": "cuda_events" if self.cuda else "perf_counter", "flush_bytes": 0,
              "device": {"kind": "cuda" if self.cuda else "cpu", "name": platform.processor() or platform.machine()}}
        if torch is not None and torch.version.cuda:
            ev["cuda"] = torch.version.cuda
        if self.cuda:
            idx = torch.cuda.current_device()
            props = torch.cuda.get_device_properties(idx)
            l2 = int(getattr(props, "L2_cache_size", 0) or 0)
            uuid = str(getattr(props, "uuid", "") or "")
            if uuid and not uuid.startswith("GPU-"):
                uuid = "GPU-" + uuid
            ev["device"] = {"kind": "cuda", "name": props.name, "index": idx,
                            "compute_capability": "%d.%d" % (props.major, props.minor),
                            "sm_count": int(props.multi_processor_count), "l2_bytes": l2,
                            "memory_bytes": int(props.total_memory), "uuid": uuid}
            if c.get("flush", True) and not profiling:
                n = int(c.get("flush_bytes") or 0)
                if n <= 0:
                    n = max(256 * MIB, 4 * l2)
                # A buffer that each sample reads through, evicting the
                # kernel's inputs and outputs from L2 (triton's do_bench
                # zeroes 256 MiB; 4 x L2 also covers future parts). Reading
                # rather than writing leaves clean lines behind: the dirty
                # lines of a zeroing flush would be written back during the
                # timed call and billed to it (5% of a 138 us memory-bound
                # kernel on an H100, experiments/timing-validation).
                n -= n % 8
                self.flush_buf = torch.ones(n // 4, dtype=torch.int32, device="cuda")
                self.flush_l2 = fastest(flush_readers(self.flush_buf))
                self.flush_bytes = n
                ev["flush_bytes"] = n
            if profiling:
                return ev
            self.calibrate_sleep()
            try:
                self.hold = Hold()
            except Exception as e:  # noqa: B902 - any failure: time with the spin kernel instead
                self.hold_note = "hold kernel unavailable (%s)" % e
            ev["timer_floor_ms"] = self.timer_floor()
            if not c.get("kernel_clock"):
                self.kclock_note = "not asked for (method.kernel_clock: false)"
            elif self.hold is None:
                self.kclock_note = "needs the hold kernel: " + self.hold_note
            else:
                self.start_kernel_clock()
            if self.kclock is not None:
                ev["kernel_clock"] = "cupti"
                ev["launch_ms"] = self.launch_ms
            else:
                ev["kernel_clock_note"] = self.kclock_note
        return ev

    def start_kernel_clock(self):
        """Sets up the kernel clock and a first measure of the launch cost
        it leaves out (3 x touch_launches): the interquartile mean of the
        gaps (the gaps cluster around several values, 0.86 to 1.3 us on an
        H100, and a median jumps between clusters). Every batch measures it
        again (touch_gaps). Where torch's profiler cannot give nanosecond
        kernel records, or finds no touch kernel, the kernel clock stays off
        and kclock_note says why."""
        self.touch_word = torch.zeros(2, dtype=torch.int32, device="cuda")
        kc = None
        try:
            kc = KernelClock()
            gaps = []
            for _ in range(3):
                torch.cuda.synchronize()
                kc.start()
                self.touch_gaps()
                gaps += launch_gaps(kc.stop())
            if len(gaps) < 2 * self.touch_launches:
                raise RuntimeError("CUPTI recorded %d of %d launch gaps" % (len(gaps), 3 * (self.touch_launches - 1)))
            self.launch_ms = iq_mean(gaps)
            self.kclock = kc
        except Exception as e:  # noqa: B902 - any failure: the events alone
            if kc is not None:
                kc.abandon()
            self.kclock_note = "CUPTI through torch's profiler is unavailable (%s: %s)" % (type(e).__name__, e)

    touch_launches = 33

    def touch_gaps(self):
        """Queues touch_launches touch kernels behind the hold, so that they
        run back to back, and waits for them; the kernel clock's records
        then hold their gaps (launch_gaps)."""
        stream = torch.cuda.current_stream().cuda_stream
        self.hold.arm(stream, 0.0, 20.0)
        for _ in range(self.touch_launches):
            self.hold.touch(stream, self.touch_word.data_ptr())
        self.hold.release()
        torch.cuda.synchronize()

    def op_models(self, c):
        params = self.params(c)
        ev = {"event": "models"}
        for key in ("flops", "bytes", "tokens"):
            f = self.models.get(key)
            if f is None:
                continue
            if positional_arity(f) >= 2:
                v = stage(key, f, params, self.impl)
            else:
                v = stage(key, f, params)
            ev[key] = finite(v)
        if self.metrics is not None:
            m = stage("metrics", self.metrics, params, dict(self.impl_params))
            if not isinstance(m, dict):
                raise StageError("metrics", TypeError("metrics returned a %s, not a dict" % type(m).__name__))
            ev["metrics"] = {str(k): finite(v) for k, v in m.items()}
        return ev

    def op_check(self, c):
        if self.reference is None:
            raise StageError("reference", ValueError("the spec names no reference to check against"))
        params = self.params(c)
        seeds = [int(s) for s in c.get("seeds") or []]
        tol = c.get("tolerance")
        st = Stats()
        inputs_modified = False
        digests = []
        dtype = ""
        for seed in seeds:
            args, kwargs = self.make_inputs(params, seed)
            pristine = clone((args, kwargs))
            rargs, rkwargs = clone((args, kwargs))
            ref = self.call(self.reference, rargs, rkwargs, "reference")
            self.sync()
            del rargs, rkwargs
            ref_leaves = stage("reference", flatten, ref, "output")
            self.poison(ref_leaves)
            out = self.call(self.fn, args, kwargs, "fn", self.impl_params)
            self.sync()
            out_leaves = stage("fn", flatten, out, "output")
            if not bitwise_equal((args, kwargs), pristine):
                inputs_modified = True
                st.fail("the implementation modified its inputs")
            if not dtype:
                dtype = next((dtype_name(r) for _, r in ref_leaves if r is not None), "")
            if len(out_leaves) != len(ref_leaves):
                st.fail("the implementation returned %d outputs, the reference %d" % (len(out_leaves), len(ref_leaves)))
            else:
                for (path, o), (_, r) in zip(out_leaves, ref_leaves):
                    st.compare(path, o, r, tol)
            digests.append((seed, digest(out_leaves), digest(ref_leaves)))
            del args, kwargs, pristine, ref, out, ref_leaves, out_leaves
        replayed = False
        for i in range(len(digests)):
            for j in range(i + 1, len(digests)):
                si, oi, ri = digests[i]
                sj, oj, rj = digests[j]
                if oi == oj and ri != rj and not replayed:
                    replayed = True
                    st.fail("the output for seed %d is bitwise identical to the output for seed %d, "
                            "but the references differ (a replayed or cached result)" % (sj, si))
        passed = not st.reasons
        return {"event": "correctness", "passed": passed, "trials": len(seeds), "seeds": seeds,
                "max_abs_error": st.max_abs, "max_rel_error": st.max_rel, "rms_rel_error": st.rms_rel,
                "mismatch_fraction": (st.mismatched / st.elements) if st.elements else 0.0,
                "nan_mismatches": st.nan, "inf_mismatches": st.inf,
                "inputs_modified": inputs_modified, "replayed": replayed,
                "tolerance": {"atol": st.atol, "rtol": st.rtol}, "dtype": dtype,
                "reason": "; ".join(st.reasons)}

    def poison(self, ref_leaves):
        """Leaves NaN-filled blocks in torch's CUDA caching allocator.

        Blocks of each reference output's size (and one large block) are
        filled with 0xFF bytes (NaN in every floating dtype, -1 in integers)
        and freed: the allocator hands them to the implementation's outputs,
        so an output element the implementation never writes shows up as NaN
        instead of as a stale correct value. Host memory cannot be poisoned
        this way (malloc returns fresh zero pages for large blocks).
        """
        if not self.cuda:
            return
        sizes = [x.numel() * x.element_size() for _, x in ref_leaves if is_tensor(x) and x.is_cuda]
        free, _ = torch.cuda.mem_get_info()
        budget = free // 2
        bufs = []
        try:
            for n in sizes:
                for _ in range(2):
                    if n <= 0 or n > budget:
                        continue
                    bufs.append(torch.full((n,), 255, dtype=torch.uint8, device="cuda"))
                    budget -= n
            big = min(max(64 * MIB, 2 * sum(sizes)), budget)
            if big > 0:
                bufs.append(torch.full((big,), 255, dtype=torch.uint8, device="cuda"))
        except RuntimeError:
            pass  # poisoning is best effort; running out of memory here is not the implementation's fault
        del bufs

    def op_time(self, c):
        params = self.params(c)
        seed = int(c.get("seed") or 0)
        key = json.dumps(params, sort_keys=True) + "/" + str(seed)
        if key != self.time_key:
            self.time_inputs = self.graph = None
            gc.collect()
            if self.cuda:
                torch.cuda.empty_cache()
            self.time_inputs = self.make_inputs(params, seed)
            self.time_key = key
            self.warmed = False
            self.long_call = None
        args, kwargs = self.time_inputs
        fn, extra = self.fn, self.impl_params

        def call():
            return self.call(fn, args, kwargs, "fn", extra)

        first = not self.warmed
        if first:
            call()  # untimed: compilation, autotuning, lazy initialisation
            self.sync()
            if self.cuda_graph:
                self.capture(call)
        if self.graph is not None:
            call = self.graph.replay
        warmup_ms = float(c.get("warmup_ms") or 100.0)
        wcalls, wms, enqueue_ms = self.warmup(call, warmup_ms, first)
        self.warmed = True
        max_ms = float(c.get("kernel_clock_max_ms") or 0.0)
        if self.long_call is None and self.kclock is not None and self.hold is not None and max_ms > 0:
            gpu_ms = self.gpu_ms(call, bool(c.get("flush", True)), enqueue_ms)
            self.long_call = ""
            if gpu_ms >= max_ms:
                self.long_call = ("the call takes %.3g ms on the GPU, at least kernel_clock_max_ms (%g): timed on "
                                  "the events alone, which CUPTI's recording would slow" % (gpu_ms, max_ms))
        discarded = 0
        # No garbage collection while sampling (as timeit does): a collection
        # stalls the host for up to milliseconds, which a GPU sample pays
        # as an idle gap and a CPU sample as time.
        collecting = gc.isenabled()
        gc.disable()
        kernel = {}
        t0 = time.perf_counter()
        try:
            if self.cuda:
                samples, discarded, cover, kernel = self.time_cuda(call, c, enqueue_ms, self.long_call or "")
            else:
                samples = self.time_cpu(call, c)
        finally:
            if collecting:
                gc.enable()
        ev = {"event": "samples", "samples_ms": samples, "warmup_calls": wcalls, "warmup_ms": wms,
              "timer": "cuda_events" if self.cuda else "perf_counter",
              "sampling_ms": (time.perf_counter() - t0) * 1e3}
        ev.update(kernel)
        if self.cuda:
            ev["discarded"] = discarded
            ev["cover"] = cover
            if cover == "spin":
                ev["spin_ms"] = self.sleep_ms
            if self.hold_note:
                ev["cover_note"] = self.hold_note
        return ev

    def op_profile(self, c):
        """One call for Nsight Compute: the worker runs under ncu with
        profiling off from the start. An untimed call first (compilation,
        autotuning, lazy initialisation stay out of the report), then one
        call between cudaProfilerStart and cudaProfilerStop, inside an NVTX
        range named "xrun <case label>"."""
        if not self.cuda:
            raise StageError("harness", RuntimeError("profiling needs a CUDA device"))
        params = self.params(c)
        args, kwargs = self.make_inputs(params, int(c.get("seed") or 0))
        fn, extra = self.fn, self.impl_params
        self.call(fn, args, kwargs, "fn", extra)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("xrun " + str(c.get("label") or ""))
        torch.cuda.profiler.start()
        try:
            self.call(fn, args, kwargs, "fn", extra)
            torch.cuda.synchronize()
        finally:
            torch.cuda.profiler.stop()
            torch.cuda.nvtx.range_pop()
        del args, kwargs
        return {"event": "profiled"}

    def capture(self, call):
        """Captures one call in a CUDA graph (kept in self.graph for replay)."""
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                call()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            call()
        self.graph = g

    def warmup(self, call, warmup_ms, first):
        """Runs call for >= warmup_ms; the first time also for >= 3 calls,
        and >= 5 calls when one call is long (5 calls > warmup_ms)."""
        t0 = time.perf_counter()
        n = 0
        enq = []
        while True:
            s = time.perf_counter()
            call()
            enq.append((time.perf_counter() - s) * 1e3)
            self.sync()
            dt = (time.perf_counter() - s) * 1e3
            n += 1
            el = (time.perf_counter() - t0) * 1e3
            if el < warmup_ms:
                continue
            if not first or (n >= 3 and (n >= 5 or 5 * dt <= warmup_ms)):
                break
        enq.sort()
        return n, el, enq[len(enq) // 2]

    def gpu_ms(self, call, flush, enqueue_ms, n=3):
        """The median of n calls timed with the events behind the hold
        kernel and the flush, without CUPTI recording: how long the call
        keeps the GPU, within the events' own cost."""
        return self.held_median(call, n, flush, hold_max_ms(enqueue_ms))

    def timer_floor(self, n=21):
        """The median of n empty timed regions (the two events around
        nothing, behind the hold kernel where there is one): the least a GPU
        sample reads."""
        return max(0.0, self.held_median(None, n, False, 20.0))

    def held_median(self, call, n, flush, max_ms):
        """The median of n event-timed regions around call (None: around
        nothing), each behind the flush when asked and the hold kernel
        where there is one."""
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        stream = torch.cuda.current_stream().cuda_stream
        xs = []
        for _ in range(n):
            torch.cuda.synchronize()
            if flush and self.flush_l2 is not None:
                self.flush_l2()
            if self.hold is not None:
                self.hold.arm(stream, 0.0, max_ms)
            start.record()
            if call is not None:
                call()
            end.record()
            if self.hold is not None:
                self.hold.release()
            torch.cuda.synchronize()
            xs.append(start.elapsed_time(end))
        xs.sort()
        return xs[n // 2]

    def calibrate_sleep(self):
        """Measures how many cycles torch.cuda._sleep spins per millisecond."""
        sleep = getattr(torch.cuda, "_sleep", None)
        if sleep is None:
            return
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        cycles = 1000000
        best = math.inf
        for _ in range(3):
            torch.cuda.synchronize()
            a.record()
            sleep(cycles)
            b.record()
            torch.cuda.synchronize()
            best = min(best, a.elapsed_time(b))
        if best > 0:
            self.sleep_cycles_per_ms = cycles / best

    def time_cuda(self, call, c, enqueue_ms, long_call=""):
        """CUDA-event samples.

        Per sample: device sync, L2 flush, a kernel that keeps the stream
        waiting, start event, the call, end event, release, device sync. The
        sync makes work on side streams count; stream order keeps the flush
        out of the timed region. The waiting kernel keeps the GPU from
        reaching the start event before the host has enqueued the call (or
        the GPU would idle inside the timed region while Python dispatches
        it), and lets the GPU rest: it lasts at least rest_ratio x the
        previous sample, so a power-limited kernel is not timed at the clock
        its own previous call pushed down.

        The waiting kernel is the hold kernel (Hold), released by the host
        once the end event is enqueued. If the start event has completed
        before the release, the hold timed out (the call waited for the GPU
        itself, or filled the launch queue): the sample is discarded, and
        after 3 time-outs the worker stops holding the GPU back for this
        implementation ("none"): a call that waits for the GPU cannot be
        run ahead of, so its samples include the host's time to enqueue it.

        Where the hold cannot be loaded, a device sync after the flush and a
        spin kernel (torch.cuda._sleep) of calibrated length: 1.5 x the
        warm-up's median enqueue time + 20 us, at least 50 us. A sample whose start event had completed by the time the call
        returned is discarded; when that happens to 5% or more of at least
        100 samples since the spin last changed, the spin is too short: the
        batch's samples so far are discarded too (a short spin leaves gaps
        this check does not always see) and the spin doubles, up to 10 ms,
        for this and later batches.

        With the kernel clock (the hold only), the mark kernel follows the
        end event, and CUPTI records the batch: each sample also gets the
        span of its call's kernels ("kernel_ms", "busy_ms" and "kernels" in
        the returned dict, or "kernel_note" saying why the batch has none).
        A long_call note (op_time: the call takes kernel_clock_max_ms or
        more on the GPU) leaves CUPTI off for the batch and is its
        "kernel_note".
        Returns the samples, how many were discarded, the cover used and
        that dict.
        """
        flush = bool(c.get("flush", True)) and self.flush_buf is not None
        min_n = max(1, int(c.get("min_samples") or 1))
        max_n = max(min_n, int(c.get("max_samples") or 1000000))
        budget = float(c.get("budget_ms") or 100.0)
        wall = float(c.get("wall_ms") or 4 * budget)
        rest = max(0.0, float(c.get("rest_ratio") or 0.0))
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        stream = torch.cuda.current_stream().cuda_stream
        max_hold_ms = hold_max_ms(enqueue_ms)
        sleep = getattr(torch.cuda, "_sleep", None)
        per_ms = self.sleep_cycles_per_ms
        cycles = max_cycles = 0
        if sleep is not None and per_ms > 0:
            spin_ms = min(max(1.5 * enqueue_ms + 0.02, 0.05), 1.0)
            cycles = 0 if self.uncovered else max(int(spin_ms * per_ms), self.spin_cycles)
            max_cycles = int(10.0 * per_ms)
        samples = []
        discarded = 0
        total = prev = 0.0
        kc = self.kclock if self.hold is not None and not long_call else None
        kept = []  # per sample taken behind the hold and mark: whether it was kept
        if kc is not None:
            kc.start()
        t0 = time.perf_counter()
        try:
            while True:
                torch.cuda.synchronize()
                hold = self.hold
                if flush:
                    self.flush_l2()
                    if hold is None:
                        torch.cuda.synchronize()
                rest_ms = min(rest * prev, 1000.0)
                if hold is not None:
                    hold.arm(stream, rest_ms, max_hold_ms)
                    start.record()
                    call()
                    end.record()
                    if kc is not None:
                        hold.mark(stream)
                    early = start.query()
                    hold.release()
                else:
                    wait = max(cycles, int(rest_ms * per_ms))
                    if wait:
                        sleep(wait)
                    start.record()
                    call()
                    early = 0 < cycles < max_cycles and start.query()
                    end.record()
                torch.cuda.synchronize()
                ms = start.elapsed_time(end)
                if hold is not None and kc is not None:
                    kept.append(not early)
                if early:
                    discarded += 1
                    if hold is not None:
                        self.hold_timeouts += 1
                        if self.hold_timeouts >= 3:
                            self.hold, self.uncovered, cycles = None, True, 0
                            self.hold_note = ("the hold kernel timed out (%.0f ms) 3 times: the call waits for the GPU "
                                              "(or fills the launch queue), so its samples include the host's time "
                                              "to enqueue it" % max_hold_ms)
                    else:
                        self.spin_taken += 1
                        self.spin_early += 1
                        if self.spin_early * 20 >= self.spin_taken >= 100:
                            discarded += len(samples)
                            samples, total = [], 0.0
                            cycles = self.spin_cycles = min(2 * cycles, max_cycles)
                            self.spin_taken = self.spin_early = 0
                    if len(samples) >= min_n and (time.perf_counter() - t0) * 1e3 >= wall:
                        break
                    continue
                if hold is None and cycles:
                    self.spin_taken += 1
                prev = ms
                samples.append(ms)
                total += ms
                n = len(samples)
                if n >= max_n:
                    break
                if n >= min_n and (total >= budget or (time.perf_counter() - t0) * 1e3 >= wall):
                    break
            kernel = {}
            if kc is not None:
                if self.hold is not None:
                    # The launch cost, measured again with the GPU in the
                    # state its samples left it.
                    self.touch_gaps()
                records = kc.stop()
                kernel = self.kernel_samples(records, kept, len(samples))
                if "kernel_ms" in kernel:
                    kernel["launch_gaps_ms"] = launch_gaps(records)
        finally:
            if kc is not None:
                kc.abandon()
        if kc is None:
            kernel = {"kernel_note": long_call or self.kclock_note or
                      ("the GPU was not held back by the hold kernel: " + self.hold_note)}
        if self.hold is not None:
            self.sleep_ms, cover = 0.0, "hold"
        elif cycles and not self.uncovered:
            self.sleep_ms, cover = cycles / per_ms, "spin"
        else:
            self.sleep_ms, cover = 0.0, "none"
        return samples, discarded, cover, kernel

    def kernel_samples(self, records, kept, n):
        """The kernel clock's reading of a batch: per kept sample, the span
        of its call's GPU records, their summed durations and their count;
        or a note saying why the batch has none (the events alone then)."""
        if self.hold is None:
            return {"kernel_note": "the hold kernel timed out during the batch: " + self.hold_note}
        wins = call_windows(records)
        if len(wins) != len(kept):
            return {"kernel_note": "CUPTI recorded %d of the batch's %d calls" % (len(wins), len(kept))}
        wins = [w for w, k in zip(wins, kept) if k]
        if len(wins) != n:
            return {"kernel_note": "%d kernel readings for %d samples" % (len(wins), n)}
        if any(w is None for w in wins):
            return {"kernel_note": "a call ran no kernel, copy or memory set on the GPU"}
        counts = sorted(w[2] for w in wins)
        return {"kernel_ms": [w[0] for w in wins], "busy_ms": [w[1] for w in wins],
                "kernels": counts[len(counts) // 2] if counts else 0}

    def time_cpu(self, call, c):
        min_n = max(1, int(c.get("min_samples") or 1))
        max_n = max(min_n, int(c.get("max_samples") or 1000000))
        budget = float(c.get("budget_ms") or 100.0)
        wall = float(c.get("wall_ms") or 4 * budget)
        clock = time.perf_counter_ns
        samples = []
        total = 0.0
        t0 = clock()
        while True:
            s = clock()
            call()
            ms = (clock() - s) / 1e6
            samples.append(ms)
            total += ms
            n = len(samples)
            if n >= max_n:
                break
            if n >= min_n and (total >= budget or (clock() - t0) / 1e6 >= wall):
                break
        return samples


def refresh_torch():
    """Picks up torch once the experiment's code has imported it.

    On the CPU the harness does not import torch itself (it takes a second or
    two): outputs can only be torch tensors if the experiment imported it.
    """
    global torch
    if torch is None:
        torch = sys.modules.get("torch")


def package_version(name):
    try:
        from importlib import metadata
        return metadata.version(name)
    except Exception:  # not installed, or metadata unreadable
        return ""


def error_event(cid, exc):
    where = "harness"
    if isinstance(exc, StageError):
        where, exc = exc.where, exc.exc
    kind = classify(exc)
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    msg = "%s: %s" % (type(exc).__name__, exc) if str(exc) else type(exc).__name__
    return {"event": "error", "id": cid, "kind": kind, "where": where, "type": type(exc).__name__,
            "message": msg, "traceback": tb[-16000:]}


def after_error(ev):
    """Frees what an error left behind so the next op can run."""
    if ev["kind"] == "oom" and torch is not None and torch.cuda.is_available():
        gc.collect()
        try:
            torch.cuda.empty_cache()
        except RuntimeError:
            pass


OPS = ("init", "models", "check", "time", "profile")


def main():
    cmd_fd = int(os.environ.get("XRUN_CMD_FD", "3"))
    ev_fd = int(os.environ.get("XRUN_EVENT_FD", "4"))
    # Programs the experiment starts (compilers, profilers) must not inherit
    # the protocol descriptors, or a stray write would corrupt the stream.
    os.set_inheritable(cmd_fd, False)
    os.set_inheritable(ev_fd, False)
    commands = os.fdopen(cmd_fd, "r", encoding="utf-8")
    events = os.fdopen(ev_fd, "w", encoding="utf-8")
    faulthandler.enable(file=sys.stderr, all_threads=True)
    h = Harness(events)
    for line in commands:
        line = line.strip()
        if not line:
            continue
        cid = None
        try:
            cmd = json.loads(line)
            cid = cmd.get("id")
            op = cmd.get("op")
            if op == "exit":
                break
            if op not in OPS:
                raise StageError("harness", ValueError("unknown op %r; known: %s, exit" % (op, ", ".join(OPS))))
            refresh_torch()
            ev = getattr(h, "op_" + op)(cmd)
            ev["id"] = cid
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: B902 - report everything, keep serving
            ev = error_event(cid, e)
            after_error(ev)
        h.send(ev)
        gc.collect()


if __name__ == "__main__":
    main()
