"""The measurements behind the kernel clock (README.md, "Two clocks").

    python3 clock-probe.py clocks OUT.json   # runner-style samples of nine kernels: the events and CUPTI's span
    ncu --clock-control none --cache-control all --nvtx --metrics gpu__time_duration.sum --csv \\
        python3 clock-probe.py ncu none      # the same kernels for Nsight Compute (flush: none or read256)
    python3 clock-probe.py gaps              # gaps between back-to-back launches, as CUPTI records them
    python3 clock-probe.py cupti             # the events with CUPTI recording and without, alternately
    python3 clock-probe.py selfgaps OUT.json # gaps between back-to-back calls of each kernel itself
    python3 clock-probe.py pairs             # gaps between launches of the same kernel and of two alternating ones
    python3 clock-probe.py levels            # which gaps keep their value when the stream's launch cost changes level
    python3 clock-probe.py streams           # per process: launch gaps on the default stream, in a CUDA graph and on
                                             # three new streams, beside three small kernels' CUPTI spans

"clocks" times each kernel the runner's way (flush, hold kernel, events
around the call, mark kernel, release, sync) with torch's profiler
recording, for four L2 flushes (read 256 MiB as the runner does, none,
zero 256 MiB, read 1 GiB), and prints per kernel the events' median and
the median CUPTI span and summed kernel time of the calls. "ncu" launches
the same kernels 20 times each (mm_large 10), each in an NVTX range
k_<name>, after the chosen flush. "gaps" queues 65 launches behind the
hold, ten times, of a one-thread kernel that writes a word (the runner's
touch kernel), of an empty kernel and of a Triton add over 64 Ki floats,
and prints the gaps' medians and interquartile means. "cupti" times four
softmax calls 120 times with the profiler off and on, three rounds.
"selfgaps" queues 33 calls of each kernel but the empty one behind the hold
(mm_large 9), ten rounds (mm_large 3), with and without the runner's read
flush between calls, and prints the gaps CUPTI records between the end of
one call's last kernel and the start of the next call's first, beside the
touch kernel's gaps measured in between: does a kernel's own launch cost
track Nsight Compute's gpu__time_duration minus CUPTI's span better than
the touch kernel's? "pairs" prints, for this process, the gaps (interquartile
mean and median, us) between back-to-back touch kernels, between touch and
mark kernels launched alternately, and between a Triton add over 1 Mi
floats and touch kernels launched alternately, ten rounds of 33 launches
behind the hold: run it in several processes to see whether a measure
keeps its value from one process to the next. "levels" prints, per
process, the touch-to-touch gap on the default stream (its level) beside
gaps that might not follow it: touches with a wait on another stream's
event between them, and the gap from the hold kernel's end to a touch
behind an event record, as in a sample. "streams" prints one JSON line per
process: the touch-to-touch gap on the default stream, between touch
kernels captured in a CUDA graph and replayed behind the hold, and on three
new streams, beside the median CUPTI span and events of add_768k,
softmax_2048x1024 and mm_small timed the runner's way: run it in several
processes, and Nsight Compute in several, to see which launch measure keeps
its value across processes.
"""
import ctypes
import json
import os
import statistics
import sys
import time

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "runner", "harness"))  # the xrun_harness package
from xrun_harness.gpu.flush import fastest, readers as flush_readers  # noqa: E402
from xrun_harness.gpu.hold import HOLD_NAME, HOLD_PTX, MARK_NAME, TOUCH_NAME, Hold  # noqa: E402
from xrun_harness.gpu.kernelclock import KernelClock, call_windows, iq_mean, launch_gaps  # noqa: E402
sys.path.insert(0, os.path.join(here, "softmax"))
sys.path.insert(0, os.path.join(here, "..", "..", "kernels"))
import softmax  # noqa: E402
import validation  # noqa: E402
from timing import cases as tcases, kernel as tkernel  # noqa: E402


def kernels():
    """Nine calls from ~1 us to ~4 ms, each warmed up."""
    lib = ctypes.CDLL("libcuda.so.1")
    mod = ctypes.c_void_p()
    lib.cuModuleLoadData(ctypes.byref(mod), HOLD_PTX)
    fn = ctypes.c_void_p()
    lib.cuModuleGetFunction(ctypes.byref(fn), mod, b"xrun_mark")
    stream = torch.cuda.current_stream().cuda_stream
    lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    k = {"empty": lambda: lib.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, None, None)}
    one = torch.ones(1, device="cuda")
    k["tiny_add"] = lambda: one.add_(1)
    x1, y1 = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    k["add_1m"] = lambda: tkernel.triton_add(x1, y1)
    xs, = softmax.inputs({"shape": "2048x1024", "device": "cuda"}, 1)
    k["sm_s_triton"] = lambda: softmax.triton_softmax(xs)
    k["sm_s_torch"] = lambda: softmax.torch_softmax(xs)
    a, b = tcases.inputs({"case": "mm_small", "device": "cuda"}, 1)
    k["mm_small"] = lambda: tkernel.kernel(a, b)
    xm, = softmax.inputs({"shape": "8192x2048", "device": "cuda"}, 1)
    k["sm_m_triton"] = lambda: softmax.triton_softmax(xm)
    x32, y32 = tcases.inputs({"case": "add_32m", "device": "cuda"}, 1)
    k["add_32m"] = lambda: tkernel.kernel(x32, y32)
    A, B = tcases.inputs({"case": "mm_large", "device": "cuda"}, 1)
    k["mm_large"] = lambda: tkernel.kernel(A, B)
    for f in k.values():
        for _ in range(3):
            f()
    torch.cuda.synchronize()
    return k


def flushes():
    buf = torch.ones(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    big = torch.ones(1024 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    return {"read256": fastest(torch, flush_readers(torch, buf)), "read1g": fastest(torch, flush_readers(torch, big)),
            "zero256": lambda: buf.zero_(), "none": lambda: None}


def held_samples(hold, kc, stream, flush, f, n, clock=True):
    """n calls of f timed the runner's way (flush, hold kernel, events around
    the call, mark kernel, release, sync) with the kernel clock recording, or
    with clock False on the events alone (no mark): the events' readings (ms)
    and CUPTI's records (None without the clock)."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ev, prev = [], 0.0
    if clock:
        kc.start()
    for _ in range(n):
        torch.cuda.synchronize()
        flush()
        hold.arm(stream, 0.5 * prev, 50.0)
        s.record()
        f()
        e.record()
        if clock:
            hold.mark(stream)
        hold.release()
        torch.cuda.synchronize()
        prev = s.elapsed_time(e)
        ev.append(prev)
    return ev, kc.stop() if clock else None


def clocks(outpath):
    fl = flushes()
    k = kernels()
    hold = Hold()
    kc = KernelClock(torch, hold, None)  # no touch kernel here: no word for it
    stream = torch.cuda.current_stream().cuda_stream
    out = {}
    for name, f in k.items():
        n = 60 if name == "mm_large" else 800
        for fname in ("read256", "none", "zero256", "read1g"):
            if name == "mm_large" and fname != "read256":
                continue
            ev, recs = held_samples(hold, kc, stream, fl[fname], f, n)
            if name == "empty":  # the empty kernel is a mark itself: the first mark after a hold is the call
                spans, busy, cnt, cur = [], [], [], None
                for _, nm, st, en in recs:
                    if nm == HOLD_NAME:
                        cur = True
                    elif nm == MARK_NAME and cur:
                        spans.append((en - st) / 1e6)
                        cur = None
                busy, cnt = spans, [1] * len(spans)
            else:
                w = [x for x in call_windows(recs) if x]
                spans, busy, cnt = [x[0] for x in w], [x[1] for x in w], [x[2] for x in w]
            rec = {"events": statistics.median(ev[5:]), "cupti_span": statistics.median(spans[5:]),
                   "cupti_busy": statistics.median(busy[5:]), "kernels": statistics.median(cnt), "n": len(ev)}
            out[f"{name}/{fname}"] = rec
            print(f"{name:12s} {fname:8s} events {rec['events'] * 1e3:9.4f} us  cupti span {rec['cupti_span'] * 1e3:9.4f} us  "
                  f"busy {rec['cupti_busy'] * 1e3:9.4f}  kernels {rec['kernels']}", flush=True)
    with open(outpath, "w") as fh:
        json.dump(out, fh, indent=1)


def ncu(fname):
    fl = flushes()
    for name, f in kernels().items():
        for _ in range(10 if name == "mm_large" else 20):
            fl[fname]()
            torch.cuda.synchronize()
            if name == "mm_large":
                time.sleep(0.003)
            torch.cuda.nvtx.range_push("k_" + name)
            f()
            torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()


def gaps():
    word = torch.zeros(2, dtype=torch.int32, device="cuda")
    hold = Hold()
    kc = KernelClock(torch, hold, word)
    stream = torch.cuda.current_stream().cuda_stream
    x, y = torch.randn(1 << 16, device="cuda"), torch.randn(1 << 16, device="cuda")
    tkernel.triton_add(x, y)
    torch.cuda.synchronize()

    def run(launch, pred, n=65):
        torch.cuda.synchronize()
        kc.start()
        hold.arm(stream, 0.0, 50.0)
        for _ in range(n):
            launch()
        hold.release()
        torch.cuda.synchronize()
        ks = sorted((s, e) for _, nm, s, e in kc.stop() if pred(nm))
        return [(ks[i + 1][0] - ks[i][1]) / 1e3 for i in range(len(ks) - 1)]

    for label, launch, pred in [("touch", lambda: hold.touch(stream, word.data_ptr()), lambda n: n == TOUCH_NAME),
                                ("empty", lambda: hold.mark(stream), lambda n: n == MARK_NAME),
                                ("add64k", lambda: tkernel.triton_add(x, y), lambda n: "add" in n)]:
        every, per = [], []
        for _ in range(10):
            g = run(launch, pred)
            every += g
            per.append((round(statistics.median(g), 3), round(iq_mean(g), 3)))
        print(f"{label}: per round (median, interquartile mean) us: {per}")
        print(f"   all {len(every)}: median {statistics.median(every):.3f} interquartile mean {iq_mean(every):.3f}")


def selfgaps(outpath):
    fl = flushes()
    k = kernels()
    word = torch.zeros(2, dtype=torch.int32, device="cuda")
    hold = Hold()
    kc = KernelClock(torch, hold, word)
    stream = torch.cuda.current_stream().cuda_stream
    skip = {HOLD_NAME, MARK_NAME, TOUCH_NAME}

    def per_call(f):
        """Records per call: one call behind the hold, then the mark."""
        torch.cuda.synchronize()
        kc.start()
        hold.arm(stream, 0.0, 50.0)
        f()
        hold.mark(stream)
        hold.release()
        torch.cuda.synchronize()
        return len([r for r in kc.stop() if r[1] not in skip])

    def round_(f, kper, n, flush):
        torch.cuda.synchronize()
        kc.start()
        hold.arm(stream, 0.0, 200.0)
        for _ in range(n):
            if flush:
                fl["read256"]()
            f()
        hold.release()
        torch.cuda.synchronize()
        recs = kc.stop()
        calls = [r for r in recs if r[1] not in skip and not (flush and r[1] in flush_names)]
        if len(calls) != kper * n:
            return None
        chunks = [calls[i:i + kper] for i in range(0, len(calls), kper)]
        return [(min(s for _, _, s, _ in chunks[i + 1]) - max(e for _, _, _, e in chunks[i])) / 1e3
                for i in range(len(chunks) - 1)]

    def touch():
        torch.cuda.synchronize()
        kc.start()
        hold.arm(stream, 0.0, 50.0)
        for _ in range(33):
            hold.touch(stream, word.data_ptr())
        hold.release()
        torch.cuda.synchronize()
        return [g * 1e3 for g in launch_gaps(kc.stop())]

    # The flush's own kernel names, so that its records can be told apart.
    torch.cuda.synchronize()
    kc.start()
    fl["read256"]()
    torch.cuda.synchronize()
    flush_names = {r[1] for r in kc.stop()}
    out = {}
    for name, f in k.items():
        if name == "empty":  # the mark kernel itself: its gaps are the touch kernel's
            continue
        kper = per_call(f)
        big = name == "mm_large"
        for flush in (False, True):
            gs, ts = [], []
            for _ in range(3 if big else 10):
                g = round_(f, kper, 9 if big else 33, flush)
                if g is not None:
                    gs += g
                ts += touch()
            label = "%s/%s" % (name, "read256" if flush else "none")
            rec = {"kernels_per_call": kper, "n": len(gs), "touch_n": len(ts)}
            if gs:
                rec.update(self_median=statistics.median(gs), self_iqm=iq_mean(gs),
                           self_min=min(gs), self_max=max(gs))
            if ts:
                rec.update(touch_median=statistics.median(ts), touch_iqm=iq_mean(ts))
            out[label] = rec
            print("%-22s k=%d self gaps us: median %s iqm %s (n %d)   touch: median %.3f iqm %.3f" % (
                label, kper, "%.3f" % rec["self_median"] if gs else "-", "%.3f" % rec["self_iqm"] if gs else "-",
                len(gs), rec.get("touch_median", float("nan")), rec.get("touch_iqm", float("nan"))), flush=True)
    with open(outpath, "w") as fh:
        json.dump(out, fh, indent=1)


def pairs():
    word = torch.zeros(2, dtype=torch.int32, device="cuda")
    x, y = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    tkernel.triton_add(x, y)
    torch.cuda.synchronize()
    hold = Hold()
    kc = KernelClock(torch, hold, word)
    stream = torch.cuda.current_stream().cuda_stream
    t = lambda: hold.touch(stream, word.data_ptr())  # noqa: E731
    m = lambda: hold.mark(stream)  # noqa: E731
    a = lambda: tkernel.triton_add(x, y)  # noqa: E731

    def label(name):
        return {TOUCH_NAME: "t", MARK_NAME: "m"}.get(name, "a" if "add" in name else None)

    def run(seq, rounds=10):
        by = {}
        for _ in range(rounds):
            torch.cuda.synchronize()
            kc.start()
            hold.arm(stream, 0.0, 50.0)
            for f in seq:
                f()
            hold.release()
            torch.cuda.synchronize()
            recs = [(s, e, label(n)) for _, n, s, e in kc.stop() if label(n)]
            recs.sort()
            for (s0, e0, l0), (s1, e1, l1) in zip(recs, recs[1:]):
                by.setdefault(l0 + ">" + l1, []).append((s1 - e0) / 1e3)
        return by

    out = []
    for seq in ([t] * 33, [t, m] * 17, [a, t] * 17):
        for k, g in sorted(run(seq).items()):
            out.append("%s iqm %.3f med %.3f n %d" % (k, iq_mean(g), statistics.median(g), len(g)))
    # Touch kernels with an event recorded between them.
    ev = torch.cuda.Event()

    def te():
        t()
        ev.record()
    g = run([te] * 33)["t>t"]
    out.append("t>event>t iqm %.3f med %.3f" % (iq_mean(g), statistics.median(g)))
    # Touch kernels on other streams (other channels): a new stream, one of high priority.
    for label_, st in (("new stream", torch.cuda.Stream()), ("high-priority stream", torch.cuda.Stream(priority=-1))):
        with torch.cuda.stream(st):
            stream = st.cuda_stream
            g = run([lambda: hold.touch(stream, word.data_ptr())] * 33)["t>t"]
        out.append("%s t>t iqm %.3f med %.3f" % (label_, iq_mean(g), statistics.median(g)))
    print(" | ".join(out), flush=True)


def touch_gaps(hold, kc, stream, launch, first=TOUCH_NAME, rounds=10):
    """Queues launch() behind the hold on stream, rounds times, and returns
    the gaps (us) CUPTI records between a kernel named first (the touch
    kernel, or the hold's) and the touch kernel that follows it."""
    out = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        kc.start()
        hold.arm(stream, 0.0, 50.0)
        launch()
        hold.release()
        torch.cuda.synchronize()
        recs = sorted((s, e, n) for _, n, s, e in kc.stop() if n in (TOUCH_NAME, HOLD_NAME))
        out += [(s1 - e0) / 1e3 for (s0, e0, n0), (s1, e1, n1) in zip(recs, recs[1:])
                if n1 == TOUCH_NAME and n0 == first]
    return out


def levels():
    word = torch.zeros(2, dtype=torch.int32, device="cuda")
    torch.cuda.synchronize()
    hold = Hold()
    kc = KernelClock(torch, hold, word)
    stream = torch.cuda.current_stream().cuda_stream
    other = torch.cuda.Stream()
    done = torch.cuda.Event()
    with torch.cuda.stream(other):
        done.record()
    ev = torch.cuda.Event()
    t = lambda: hold.touch(stream, word.data_ptr())  # noqa: E731

    def gaps(seq, first=TOUCH_NAME, rounds=10):
        return touch_gaps(hold, kc, stream, seq, first, rounds)

    def plain():
        for _ in range(33):
            t()

    def waits():
        for _ in range(33):
            t()
            torch.cuda.current_stream().wait_event(done)

    def sample():
        ev.record()
        t()
    res = [("t>t", gaps(plain)), ("t>wait>t", gaps(waits)), ("hold>event>t", gaps(sample, HOLD_NAME, 40))]
    print(" | ".join("%s iqm %.3f med %.3f" % (k, iq_mean(g), statistics.median(g)) for k, g in res), flush=True)


def streams():
    word = torch.zeros(2, dtype=torch.int32, device="cuda")
    hold = Hold()
    kc = KernelClock(torch, hold, word)
    fl = flushes()["read256"]
    out = {}
    for case in ("add_768k", "softmax_2048x1024", "mm_small"):
        args = validation.inputs({"case": case, "device": "cuda"}, seed=1)
        # validation.kernel, less its import of softmax/ as a package (here it is a module)
        f = (lambda: softmax.triton_softmax(*args)) if len(args) == 1 else (lambda: tkernel.kernel(*args))
        for _ in range(3):
            f()
        ev, recs = held_samples(hold, kc, torch.cuda.current_stream().cuda_stream, fl, f, 200)
        w = [x for x in call_windows(recs) if x]
        out[case] = {"events_us": round(statistics.median(ev[10:]) * 1e3, 3),
                     "span_us": round(statistics.median([x[0] for x in w[10:]]) * 1e3, 3)}

    def gaps(st, launch):
        return round(iq_mean(touch_gaps(hold, kc, st, launch)), 3)

    def touches(st):
        for _ in range(33):
            hold.touch(st, word.data_ptr())
    default = torch.cuda.current_stream().cuda_stream
    out["default"] = gaps(default, lambda: touches(default))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        touches(torch.cuda.current_stream().cuda_stream)
    out["graph"] = gaps(default, graph.replay)
    out["new"] = []
    for _ in range(3):
        st = torch.cuda.Stream()
        with torch.cuda.stream(st):
            out["new"].append(gaps(st.cuda_stream, lambda: touches(st.cuda_stream)))
    print(json.dumps(out), flush=True)


def cupti():
    buf = torch.ones(256 << 18, dtype=torch.int32, device="cuda")
    flush = fastest(torch, flush_readers(torch, buf))
    hold = Hold()
    kc = KernelClock(torch, hold, None)  # no touch kernel here: no word for it
    stream = torch.cuda.current_stream().cuda_stream
    xl, = softmax.inputs({"shape": "32768x4096", "device": "cuda"}, 1)
    xm, = softmax.inputs({"shape": "8192x2048", "device": "cuda"}, 1)
    ks = {"torch_l": lambda: softmax.torch_softmax(xl), "naive_l": lambda: softmax.naive_softmax(xl),
          "triton_l": lambda: softmax.triton_softmax(xl), "torch_m": lambda: softmax.torch_softmax(xm)}
    for f in ks.values():
        f()
        f()
    torch.cuda.synchronize()

    def loop(f, n, on):
        return statistics.median(held_samples(hold, kc, stream, flush, f, n, clock=on)[0]) * 1e3

    for name, f in ks.items():
        res = {"off": [], "on": []}
        for _ in range(3):
            for mode in ("off", "on"):
                res[mode].append(round(loop(f, 120, mode == "on"), 2))
        print(f"{name:9s} events median us, CUPTI off: {res['off']}  on: {res['on']}", flush=True)


if __name__ == "__main__":
    {"clocks": lambda: clocks(sys.argv[2]), "ncu": lambda: ncu(sys.argv[2]), "gaps": gaps, "cupti": cupti,
     "selfgaps": lambda: selfgaps(sys.argv[2]), "pairs": pairs, "levels": levels,
     "streams": streams}[sys.argv[1]]()
