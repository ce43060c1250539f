"""What the autotuners chose during an implementation's first call at a case
(the `first` command, PROTOCOL.md): for every autotuned Triton kernel the
call launched, the config it ran, whether it was tuned in this call, read
from Triton's autotune cache, or chosen at an earlier case of this worker,
how long tuning took, and each config's time as the autotuner measured it.
TorchInductor's own autotuned kernels (torch.compile) are recorded the same
way where its runtime tunes them.

Recording wraps the autotuners' methods for the length of the call alone:
the calls that are timed later run Triton's code untouched.
"""

import importlib
import json
import os
import sys
import time
from contextlib import contextmanager

# Sources of a chosen config.
TUNED = "tuned"  # every config was timed in this call
CACHE = "cache"  # read from Triton's autotune cache (TRITON_CACHE_AUTOTUNING)
REUSED = "reused"  # chosen earlier in this worker (an earlier case with the same key)
SINGLE = "single"  # one config was left after pruning: nothing to tune

# The most configs whose times one record carries.
MAX_TIMINGS = 64


def config_params(cfg):
    """A Triton Config as a flat dict: its kwargs, then num_warps,
    num_stages, num_ctas and maxnreg where set."""
    out = {}
    for k, v in dict(getattr(cfg, "kwargs", None) or {}).items():
        out[str(k)] = v if isinstance(v, (int, float, bool, str)) or v is None else str(v)
    for k in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        v = getattr(cfg, k, None)
        if v is not None:
            out[k] = v
    return out


def config_label(cfg):
    """A short name of a config: its block sizes (the kwargs whose name holds
    BLOCK, in the kernel's order) joined by x, else every kwarg as k=v, then
    /wWARPS/sSTAGES, and /cCTAS and /rMAXNREG where they are set:
    128x256x64/w8/s3."""
    kw = dict(getattr(cfg, "kwargs", None) or {})
    blocks = [str(v) for k, v in kw.items() if "BLOCK" in str(k).upper()]
    head = "x".join(blocks) if blocks else ",".join("%s=%s" % (k, v) for k, v in kw.items())
    parts = [head] if head else []
    if getattr(cfg, "num_warps", None) is not None:
        parts.append("w%s" % cfg.num_warps)
    if getattr(cfg, "num_stages", None) is not None:
        parts.append("s%s" % cfg.num_stages)
    if (getattr(cfg, "num_ctas", None) or 1) != 1:
        parts.append("c%s" % cfg.num_ctas)
    if getattr(cfg, "maxnreg", None):
        parts.append("r%s" % cfg.maxnreg)
    return "/".join(parts)


def _median_ms(t):
    """The autotuner's timing of one config: a number or [median, p20, p80]."""
    if isinstance(t, (list, tuple)):
        t = t[0] if t else float("inf")
    try:
        t = float(t)
    except (TypeError, ValueError):
        return None
    return t if t == t and t != float("inf") else None


def _kernel_name(tuner):
    fn = getattr(tuner, "base_fn", None) or getattr(tuner, "fn", None)
    return getattr(fn, "__name__", None) or type(tuner).__name__


def _key_text(key):
    if isinstance(key, tuple):
        return ", ".join(str(k) for k in key)
    return str(key)


_MISSING = object()


class _Mark:
    """Stands in bench_time while a call runs."""


class Recorder:
    """The choices recorded during one call, in the order first met."""

    def __init__(self):
        self.choices = []
        self._seen = set()
        # handles[i]: (autotuner, key, {label: Config}) of choices[i] where
        # it was tuned or read from the cache with timings: what a check
        # of the choice needs (tunecheck).
        self.handles = {}

    def add(self, kind, kernel, key, cfg, source, tuning_ms=None, timings=None, handle=None):
        label = config_label(cfg)
        mark = (kind, kernel, key, label)
        if mark in self._seen:
            return
        self._seen.add(mark)
        if handle is not None and timings and len(timings) > 1:
            self.handles[len(self.choices)] = handle
        c = {"kernel": kernel, "kind": kind, "config": label, "params": config_params(cfg), "source": source}
        if key:
            c["key"] = key
        if tuning_ms is not None:
            c["tuning_ms"] = round(tuning_ms, 3)
        if timings:
            t = {}
            for other, v in list(timings.items())[:MAX_TIMINGS]:
                ms = _median_ms(v)
                if ms is not None:
                    t[config_label(other)] = round(ms, 6)
            if t:
                c["timings_ms"] = t
        self.choices.append(c)

    # -- Triton's Autotuner.run --------------------------------------------

    def wrap_triton(self, run):
        rec = self

        def recorded_run(tuner, *args, **kwargs):
            before = set(getattr(tuner, "cache", {}) or {})
            # Triton sets bench_time when it times the configs: a mark in
            # its place tells whether this call did. Triton reads it only
            # right after setting it; the old value is put back otherwise.
            had = tuner.__dict__.get("bench_time", _MISSING)
            mark = _Mark()
            tuner.bench_time = mark
            try:
                return run(tuner, *args, **kwargs)
            finally:
                bench = tuner.__dict__.get("bench_time", _MISSING)
                tuned = bench is not mark and isinstance(bench, (int, float))
                if bench is mark:
                    if had is _MISSING:
                        del tuner.bench_time
                    else:
                        tuner.bench_time = had
                try:
                    rec._triton(tuner, before, bench if tuned else None)
                except Exception:  # noqa: BLE001 - a record must never fail the call
                    pass

        return recorded_run

    def _triton(self, tuner, before, bench):
        """Records the config tuner ran; bench is the seconds this call's
        tuning took, None when it did not tune."""
        cfg = getattr(tuner, "best_config", None)
        if cfg is None:
            return
        cache = getattr(tuner, "cache", {}) or {}
        new = [k for k in cache if k not in before]
        if len(getattr(tuner, "configs", ()) or ()) <= 1:
            # Triton runs a one-config autotuner's config without a key.
            self.add("triton", _kernel_name(tuner), "", cfg, SINGLE)
            return
        key = next((k for k in new if cache[k] is cfg), None)
        if key is None:
            key = next((k for k, v in cache.items() if v is cfg), None)
        timings = getattr(tuner, "configs_timings", None)
        handle = None
        if key is not None and timings:
            handle = (tuner, key, {config_label(c): c for c in list(timings)[:MAX_TIMINGS]})
        if key is not None and key in new:
            if bench is not None:
                self.add("triton", _kernel_name(tuner), _key_text(key), cfg, TUNED, tuning_ms=bench * 1e3, timings=timings,
                         handle=handle)
            elif getattr(tuner, "cache_results", False):
                self.add("triton", _kernel_name(tuner), _key_text(key), cfg, CACHE, timings=timings, handle=handle)
            else:
                self.add("triton", _kernel_name(tuner), _key_text(key), cfg, SINGLE)
        else:
            self.add("triton", _kernel_name(tuner), _key_text(key) if key is not None else "", cfg, REUSED)

    # -- TorchInductor's CachingAutotuner ----------------------------------

    def wrap_inductor(self, autotune_to_one_config):
        rec = self

        def recorded(tuner, *args, **kwargs):
            t0 = time.perf_counter()
            out = autotune_to_one_config(tuner, *args, **kwargs)
            took_ms = (time.perf_counter() - t0) * 1e3
            try:
                launchers = getattr(tuner, "launchers", None) or []
                if launchers:
                    meta = getattr(tuner, "inductor_meta", None) or {}
                    name = meta.get("kernel_name") or _kernel_name(tuner)
                    rec.add("inductor", str(name), "", launchers[0].config, TUNED, tuning_ms=took_ms)
            except Exception:  # noqa: BLE001
                pass
            return out

        return recorded


def _targets():
    """(class, method name, wrapper maker) for each autotuner already
    imported. TorchInductor's runtime is imported during a compile, which
    the first call makes: it is imported here when torch.compile is in use
    (torch._dynamo imported), so that its autotuner can be wrapped."""
    out = []
    if "torch._dynamo" in sys.modules and "torch._inductor.runtime.triton_heuristics" not in sys.modules:
        try:
            importlib.import_module("torch._inductor.runtime.triton_heuristics")
        except Exception:  # noqa: BLE001 - no Inductor runtime: nothing of it to record
            pass
    mod = sys.modules.get("triton.runtime.autotuner")
    cls = getattr(mod, "Autotuner", None) if mod is not None else None
    if cls is not None and callable(getattr(cls, "run", None)):
        out.append((cls, "run", Recorder.wrap_triton))
    mod = sys.modules.get("torch._inductor.runtime.triton_heuristics")
    cls = getattr(mod, "CachingAutotuner", None) if mod is not None else None
    if cls is not None and callable(getattr(cls, "autotune_to_one_config", None)):
        out.append((cls, "autotune_to_one_config", Recorder.wrap_inductor))
    return out


@contextmanager
def recording():
    """Records the autotuners' choices while the block runs; yields the
    Recorder. Only modules already imported are wrapped: a kernel is
    autotuned by an Autotuner made when the experiment's code was imported."""
    rec = Recorder()
    patched = []
    try:
        for cls, name, wrap in _targets():
            orig = cls.__dict__.get(name)
            if orig is None:
                continue
            setattr(cls, name, wrap(rec, orig))
            patched.append((cls, name, orig))
        yield rec
    finally:
        for cls, name, orig in reversed(patched):
            setattr(cls, name, orig)


# The file name Triton gives a kernel's stored autotune result in its
# cache (triton.runtime.autotuner, TRITON_CACHE_AUTOTUNING), and the one of
# a checked choice stored beside them (tunecheck.STORED_SUFFIX).
STORED_SUFFIX = ".autotune.json"
CHECKED_SUFFIX = ".xrun-checked.json"


def forget(cache_dir):
    """Removes every stored autotune result under cache_dir (Triton's
    cache), and every checked choice stored with them; returns how many
    were removed and the failures, one line each."""
    removed, failed = 0, []
    for root, dirs, files in os.walk(cache_dir):
        for name in files:
            if not (name.endswith(STORED_SUFFIX) or name.endswith(CHECKED_SUFFIX)):
                continue
            path = os.path.join(root, name)
            try:
                os.remove(path)
                removed += 1
            except OSError as e:
                failed.append("%s: %s" % (os.path.relpath(path, cache_dir), e.strerror or e))
    return removed, failed


def main(argv=None):
    """harness.py --forget-autotune DIR: prints {"removed": N, "failed": [...]}."""
    args = sys.argv[2:] if argv is None else argv
    if len(args) != 1:
        print("usage: harness.py --forget-autotune DIR", file=sys.stderr)
        sys.exit(2)
    removed, failed = forget(args[0])
    print(json.dumps({"removed": removed, "failed": failed}))
