"""The check of an autotuner's choice (PROTOCOL.md, "first").

Triton's autotuner times each config once, with its own benchmarker, in
the implementation's first call. A choice made there on a disturbed or
cold GPU is wrong and, read from the cache, stays wrong in every later
run. After the first call the worker times the autotuner's best few
configs again on its own clock (the kernel clock where it has one), in
interleaved rounds, and:

- a choice tuned in this run that another config beats by more than
  CHECK_MARGIN is replaced by that config, which the timed calls then
  run, and stored beside Triton's cache so that later runs reuse the
  checked choice, not the autotuner's;
- a choice read from the cache that another config beats by more than
  BEATEN_MARGIN is reported, and still runs: reuse stays the default
  (xrun submit --retune tunes afresh).

Both readings are recorded: the autotuner's timings and the check's.
"""

import hashlib
import json
import os
import sys
import time

from . import autotune

# Matches result.AutotuneCheckMargin and result.AutotuneBeatenMargin.
CHECK_MARGIN = 0.01
BEATEN_MARGIN = 0.03

# The folder of stored choices inside Triton's cache, and their suffix
# (autotune.forget removes them with Triton's own results).
STORE_DIR = "xrun-checked"
STORED_SUFFIX = autotune.CHECKED_SUFFIX


def candidates(chosen, timings, n):
    """The labels to check: the chosen config first, then the others by
    the autotuner's timing, fastest first, n in all."""
    others = sorted((t, label) for label, t in timings.items() if label != chosen)
    return [chosen] + [label for _, label in others[:max(0, n - 1)]]


def median(xs):
    s = sorted(xs)
    n = len(s)
    if n == 0:
        return float("inf")
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def decide(chosen, medians, source):
    """What the check concludes from each config's median (ms): (the
    config to run, the one it replaced or "", the one that beat the cached
    choice or "", a sentence)."""
    best = min(medians, key=lambda k: (medians[k], k != chosen))
    mine = medians[chosen]
    gain = mine / medians[best] - 1 if medians[best] > 0 else 0.0
    if best == chosen:
        return chosen, "", "", "the autotuner's choice %s was the fastest of the %d configs checked" % (chosen, len(medians))
    if source == autotune.TUNED:
        if gain > CHECK_MARGIN:
            return best, chosen, "", ("%s ran %.1f %% faster than the autotuner's choice %s on the runner's clock: %s was timed"
                                      % (best, 100 * gain, chosen, best))
        return chosen, "", "", ("%s ran %.1f %% faster than the autotuner's choice %s, within the check's %g %% margin: %s was kept"
                                % (best, 100 * gain, chosen, 100 * CHECK_MARGIN, chosen))
    if gain > BEATEN_MARGIN:
        return chosen, "", best, ("the cached choice %s was beaten: %s ran %.1f %% faster on the runner's clock; the cached "
                                  "choice was timed (xrun submit --retune tunes afresh)" % (chosen, best, 100 * gain))
    return chosen, "", "", "the cached choice %s is within %g %% of the fastest config checked" % (chosen, 100 * BEATEN_MARGIN)


def run_check(labels, set_config, time_batch, rounds, wall_ms=0.0, clock=time.perf_counter):
    """Times each of labels in rounds interleaved rounds (set_config(label)
    then time_batch() -> (samples in ms, clock)), starting no round after
    the first once wall_ms have passed (0: no limit); returns each label's
    median over all its samples, the clock ("kernel" only where every
    batch had it) and the rounds run."""
    samples = {label: [] for label in labels}
    which = "kernel"
    t0 = clock()
    done = 0
    while done < max(1, rounds):
        if done > 0 and wall_ms > 0 and (clock() - t0) * 1e3 >= wall_ms:
            break
        for label in labels:
            set_config(label)
            xs, c = time_batch()
            samples[label].extend(xs)
            if c != "kernel":
                which = "events"
        done += 1
    return {label: median(xs) for label, xs in samples.items()}, which, done


def jit_source_key(tuner):
    """The cache key of the JIT function under tuner (Triton's hash of its
    source and what it calls), or None."""
    fn = getattr(tuner, "fn", None)
    for _ in range(8):
        key = getattr(fn, "cache_key", None)
        if isinstance(key, str) and key:
            return key
        fn = getattr(fn, "fn", None)
        if fn is None:
            break
    return None


def store_path(cache_dir, tuner, key, labels, device=""):
    """Where the checked choice of tuner at key is kept: a file in
    cache_dir/xrun-checked named by the kernel's code, the key, its
    configs, Triton's version and the device; None without the code's
    key (nothing is stored then)."""
    src = jit_source_key(tuner)
    if not cache_dir or src is None:
        return None
    triton = sys.modules.get("triton")
    parts = [src, autotune._kernel_name(tuner), repr(key), ",".join(sorted(labels)), getattr(triton, "__version__", ""), device]
    h = hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:40]
    return os.path.join(cache_dir, STORE_DIR, h + STORED_SUFFIX)


def load(path):
    """The label a check stored at path, or None."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            got = json.load(f).get("chosen")
    except (OSError, ValueError, AttributeError):
        return None
    return got if isinstance(got, str) else None


def save(path, record):
    """Stores a check's record (its "chosen" label first) at path,
    atomically; returns whether it was written."""
    if path is None:
        return False
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp%d" % os.getpid()
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(record, f, sort_keys=True)
        os.replace(tmp, path)
        return True
    except OSError:
        return False


def cache_dir():
    """Triton's cache directory as this process's Triton sees it."""
    d = os.environ.get("TRITON_CACHE_DIR")
    if d:
        return d
    knobs = getattr(sys.modules.get("triton"), "knobs", None)
    d = getattr(getattr(knobs, "cache", None), "dir", None)
    if isinstance(d, str) and d:
        return d
    return os.path.join(os.path.expanduser("~"), ".triton", "cache")
