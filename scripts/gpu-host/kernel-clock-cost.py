#!/usr/bin/env python3
"""What one batch of the kernel clock costs beside its samples, on the GPU
of this machine (no Docker, no runner): the harness's own sampler takes
batches of a softmax the way a timing does (0.5 s / 3 rounds each), once
with CUPTI's records read through torch's profiler (ProfilerClock) and
once through CUPTI's activity API (ActivityClock), and prints where
each batch's wall time went and the medians both clocks read.

    python3 scripts/gpu-host/kernel-clock-cost.py [--clock profiler|activity] [--batches N] [--json OUT]

Run it from the repository root; each clock in a process of its own.
"""

import argparse
import json
import statistics
import sys
import time
import types

sys.path.insert(0, "runner/harness")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clock", default="profiler", choices=["profiler", "activity"])
    ap.add_argument("--batches", type=int, default=9)
    ap.add_argument("--json")
    a = ap.parse_args()

    import torch
    from xrun_harness.gpu.sampler import Sampler
    from xrun_harness.timing import StopRule

    torch.cuda.init()
    props = torch.cuda.get_device_properties(0)
    s = Sampler(torch)
    s.open_flush(0, int(getattr(props, "L2_cache_size", 0) or 0))
    ready = types.SimpleNamespace()
    from xrun_harness.gpu.activityclock import ActivityClock
    from xrun_harness.gpu.kernelclock import ProfilerClock, open_kernel_clock
    s.prepare(ready, False)
    t0 = time.perf_counter()
    s.kclock, s.kclock_note = open_kernel_clock(torch, s.hold, readers=[
        {"profiler": ProfilerClock, "activity": ActivityClock}[a.clock]])
    if s.kclock is None:
        sys.exit(s.kclock_note)
    open_ms = (time.perf_counter() - t0) * 1e3
    kc = s.kclock
    cost = {"start": [], "stop": []}
    start, stop = kc.start, kc.stop

    def timed_start():
        t = time.perf_counter()
        start()
        cost["start"].append((time.perf_counter() - t) * 1e3)

    def timed_stop():
        t = time.perf_counter()
        r = stop()
        cost["stop"].append((time.perf_counter() - t) * 1e3)
        return r

    kc.start, kc.stop = timed_start, timed_stop
    out = {"clock": a.clock, "device": props.name, "torch": torch.__version__, "open_ms": open_ms, "cases": []}
    for rows, cols in ((2048, 1024), (8192, 2048), (32768, 4096)):
        x = torch.randn(rows, cols, device="cuda")

        def call():
            return torch.softmax(x, -1)

        for _ in range(20):
            call()
        torch.cuda.synchronize()
        budget = 500.0 / 3
        t = types.SimpleNamespace(flush=True, rest_ratio=0.0, kernel_clock_max_ms=0.0)
        batches = []
        cost["start"].clear()
        cost["stop"].clear()
        for _ in range(a.batches):
            ev = types.SimpleNamespace()
            rule = StopRule(1, 100000, budget, budget)
            w = time.perf_counter()
            s.sample(ev, call, t, rule, 0.01)
            wall = (time.perf_counter() - w) * 1e3
            batches.append({"wall_ms": wall, "samples": len(ev.samples_ms),
                            "event_median_ms": statistics.median(ev.samples_ms),
                            "kernel_median_ms": statistics.median(ev.kernel_ms) if ev.kernel_ms else None,
                            "kernel_note": ev.kernel_note})
        for b, st, sp in zip(batches, cost["start"], cost["stop"]):
            b["start_ms"], b["stop_ms"] = st, sp
        out["cases"].append({"case": "%dx%d" % (rows, cols), "batches": batches})
        del x
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    print("%s clock on %s, torch %s: opened in %.0f ms" % (a.clock, props.name, torch.__version__, open_ms))
    print("%-11s %8s %8s %8s %8s %8s %12s %12s" % ("case", "wall", "start", "stop", "samples", "extra%", "event med", "kernel med"))
    for c in out["cases"]:
        bs = c["batches"][1:]  # the first batch of a case warms up the clock
        med = lambda k: statistics.median(b[k] for b in bs)  # noqa: E731
        kmed = [b["kernel_median_ms"] for b in bs if b["kernel_median_ms"] is not None]
        print("%-11s %8.1f %8.2f %8.2f %8d %8.0f %12.5f %12s" % (
            c["case"], med("wall_ms"), med("start_ms"), med("stop_ms"), med("samples"),
            100 * (med("start_ms") + med("stop_ms")) / (500.0 / 3), med("event_median_ms"),
            ("%.5f" % statistics.median(kmed)) if kmed else bs[0]["kernel_note"]))


if __name__ == "__main__":
    main()
