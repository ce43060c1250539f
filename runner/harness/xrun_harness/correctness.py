"""The correctness check (the check command): the implementation against the
reference on fresh inputs per seed, output by output, in float64; inputs
modified in place; outputs replayed from an earlier seed."""

import math
import sys

from .errors import StageError, stage
from .protocol import Correctness, Tolerance, finite
from .tensors import bitwise_equal, clone, digest, dtype_name, flatten, poison, to_float64

# Default tolerances by output dtype: |out - ref| <= atol + rtol * |ref|,
# with atol = rtol. float8 dtypes get FP8_TOLERANCE; integers and booleans
# must match exactly.
DEFAULT_TOLERANCE = {
    "float64": 1e-7,
    "complex128": 1e-7,
    "float32": 1e-4,
    "complex64": 1e-4,
    "float16": 1e-2,
    "bfloat16": 1e-2,
}
FP8_TOLERANCE = 1e-1

# Significand bits of the floating dtypes, to pick the less precise of two.
FLOAT_PRECISION = {"float64": 53, "float32": 24, "tfloat32": 11, "float16": 11, "bfloat16": 8,
                   "float8_e4m3fn": 4, "float8_e4m3fnuz": 4, "float8_e5m2": 3, "float8_e5m2fnuz": 3,
                   "complex128": 53, "complex64": 24}

TINY = sys.float_info.min  # the smallest normal float64, a floor for |ref|


def default_tolerance(dtype):
    if dtype in DEFAULT_TOLERANCE:
        return DEFAULT_TOLERANCE[dtype]
    if dtype.startswith("float8"):
        return FP8_TOLERANCE
    return 0.0


def is_float_dtype(name):
    return name in FLOAT_PRECISION


def tolerance_dtype(out_dtype, ref_dtype):
    """The dtype whose tolerance applies, or None when the two cannot be
    compared. A reference may compute in more precision than the version
    under test (float32 against bf16, say): the comparison is in float64
    either way, and the tolerance is that of the less precise dtype."""
    if out_dtype == ref_dtype:
        return ref_dtype
    if not (is_float_dtype(out_dtype) and is_float_dtype(ref_dtype)):
        return None
    return out_dtype if FLOAT_PRECISION[out_dtype] <= FLOAT_PRECISION[ref_dtype] else ref_dtype


class Stats:
    """Worst-case error figures accumulated over outputs and seeds."""

    def __init__(self, be):
        self.be = be
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
        # Per output and kind of mismatch: (where in reasons, the counts of
        # each seed), so that one output wrong at every seed is one reason
        # with its worst count, not one per seed.
        self.counted = {}

    def fail(self, reason):
        if reason not in self.reasons:
            self.reasons.append(reason)

    def fail_count(self, key, fmt, count, *args):
        """A mismatch of count elements (fmt % (count,) + args): the
        worst over the seeds, and at how many of them."""
        if key not in self.counted:
            self.counted[key] = (len(self.reasons), [])
            self.reasons.append("")
        i, counts = self.counted[key]
        counts.append(count)
        text = fmt % ((max(counts),) + args)
        if len(counts) > 1:
            text += " (the most of %d seeds)" % len(counts)
        self.reasons[i] = text

    def compare(self, path, out, ref, tol):
        """Adds one output leaf against the reference's; tol is a Tolerance,
        or None for the dtype's default."""
        be = self.be
        od, rd = dtype_name(be, out), dtype_name(be, ref)
        if out is None or ref is None:
            if not (out is None and ref is None):
                self.fail("%s is %s, the reference's is %s" % (path, "None" if out is None else od,
                                                               "None" if ref is None else rd))
            return
        tol_dtype = tolerance_dtype(od, rd)
        if tol_dtype is None:
            self.fail("%s has dtype %s, the reference's has %s" % (path, od, rd))
            return
        if tuple(getattr(out, "shape", ())) != tuple(getattr(ref, "shape", ())):
            self.fail("%s has shape %s, the reference's has %s" % (path, list(getattr(out, "shape", ())),
                                                                   list(getattr(ref, "shape", ()))))
            return
        if tol is None:
            atol = rtol = default_tolerance(tol_dtype)
        else:
            atol, rtol = tol.atol, tol.rtol
        self.atol, self.rtol = max(self.atol, atol), max(self.rtol, rtol)
        if be.is_tensor(out) and be.is_tensor(ref):
            m = torch_error_figures(be.torch, out, ref.to(out.device), atol, rtol)
        else:
            m = numpy_error_figures(be.np, to_float64(be, out), to_float64(be, ref), atol, rtol)
        self.add(path, m, atol, rtol)

    def add(self, path, m, atol, rtol):
        """Adds the figures of one comparison (numpy_error_figures)."""
        n, nan_mis, inf_mis, max_abs, max_rel, num2, den2, bad_fin = m
        self.elements += n
        if n == 0:
            return
        self.nan += nan_mis
        self.inf += inf_mis
        self.max_abs = max(self.max_abs, finite(max_abs))
        self.max_rel = max(self.max_rel, finite(max_rel))
        num, den = math.sqrt(finite(num2)), math.sqrt(finite(den2))
        self.rms_rel = max(self.rms_rel, finite(num / max(den, TINY)) if num > 0 else 0.0)
        self.mismatched += nan_mis + inf_mis + bad_fin
        if nan_mis:
            self.fail_count((path, "nan"), "%s: %%d NaN positions differ from the reference" % path.replace("%", "%%"), nan_mis)
        if inf_mis:
            self.fail_count((path, "inf"), "%s: %%d Inf positions differ from the reference" % path.replace("%", "%%"), inf_mis)
        if bad_fin:
            self.fail_count((path, "outside"), "%s: %%d of %d elements outside atol=%g rtol=%g" % (path.replace("%", "%%"), n, atol, rtol), bad_fin)


def numpy_error_figures(np, o, r, atol, rtol):
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
        return (n, nan_mis, inf_mis, float(d.max()), float((d / np.maximum(ar, TINY)).max()),
                float(np.sum(np.square(d))), float(np.sum(np.square(ar))),
                int(np.count_nonzero(d > atol + rtol * ar)))


def torch_error_figures(torch, out, ref, atol, rtol):
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
    return (n, nan_mis, inf_mis, float(d.max().item()), float((d / ar.clamp(min=TINY)).max().item()),
            float(d.square().sum().item()), float(ar.square().sum().item()),
            int((d > atol + rtol * ar).sum().item()))


def find_replay(digests):
    """The first pair of seeds (earlier, later) whose outputs are bitwise
    identical while their references differ, or None. digests are (seed,
    output digest, reference digest) in seed order."""
    for i in range(len(digests)):
        for j in range(i + 1, len(digests)):
            si, oi, ri = digests[i]
            sj, oj, rj = digests[j]
            if oi == oj and ri != rj:
                return si, sj
    return None


def check(be, code, cmd, params, keep=None):
    """Runs the check command (a protocol.Check) on case params; returns
    the correctness event. PROTOCOL.md lists the steps.

    The first seed is the one the case is timed on: it is checked last, and
    when the implementation passed without modifying its inputs, keep (if
    given) gets (seed, (args, kwargs)), the inputs it was called on, so that
    timing need not make them again (for large inputs made on the host,
    most of a second each)."""
    if code.reference is None:
        raise StageError("reference", ValueError("the spec names no reference to check against"))
    st = Stats(be)
    inputs_modified = False
    digests = []
    dtype = ""
    seeds = list(cmd.seeds)
    kept = None
    for seed in seeds[1:] + seeds[:1]:
        args, kwargs = code.make_inputs(params, seed)
        pristine = clone(be, (args, kwargs))
        rargs, rkwargs = clone(be, (args, kwargs))
        ref = code.call_reference(rargs, rkwargs)
        be.sync()
        del rargs, rkwargs
        ref_leaves = stage("reference", flatten, be, ref, "output")
        poison(be, ref_leaves)
        out = code.call_fn(args, kwargs)
        be.sync()
        out_leaves = stage("fn", flatten, be, out, "output")
        if not bitwise_equal(be, (args, kwargs), pristine):
            inputs_modified = True
            st.fail("the implementation modified its inputs")
        if not dtype:
            dtype = next((dtype_name(be, r) for _, r in ref_leaves if r is not None), "")
        if len(out_leaves) != len(ref_leaves):
            st.fail("the implementation returned %d outputs, the reference %d" % (len(out_leaves), len(ref_leaves)))
        else:
            for (path, o), (_, r) in zip(out_leaves, ref_leaves):
                st.compare(path, o, r, cmd.tolerance)
        digests.append((seed, digest(be, out_leaves), digest(be, ref_leaves)))
        if seed == seeds[0] and keep is not None:
            kept = (args, kwargs)
        del args, kwargs, pristine, ref, out, ref_leaves, out_leaves
    digests.sort(key=lambda d: seeds.index(d[0]))
    replay = find_replay(digests)
    if kept is not None and not st.reasons and not inputs_modified and replay is None:
        keep(seeds[0], kept)
    del kept
    if replay is not None:
        st.fail("the output for seed %d is bitwise identical to the output for seed %d, "
                "but the references differ (a replayed or cached result)" % (replay[1], replay[0]))
    return Correctness(passed=not st.reasons, trials=len(cmd.seeds), seeds=list(cmd.seeds),
                       max_abs_error=st.max_abs, max_rel_error=st.max_rel, rms_rel_error=st.rms_rel,
                       mismatch_fraction=(st.mismatched / st.elements) if st.elements else 0.0,
                       nan_mismatches=st.nan, inf_mismatches=st.inf,
                       inputs_modified=inputs_modified, replayed=replay is not None,
                       tolerance=Tolerance(atol=st.atol, rtol=st.rtol), dtype=dtype, reason="; ".join(st.reasons))
