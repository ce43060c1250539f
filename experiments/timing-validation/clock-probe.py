"""The measurements behind the kernel clock (README.md, "Two clocks").

    python3 clock-probe.py clocks OUT.json   # runner-style samples of nine kernels: the events and CUPTI's span
    ncu --clock-control none --cache-control all --nvtx --metrics gpu__time_duration.sum --csv \\
        python3 clock-probe.py ncu none      # the same kernels for Nsight Compute (flush: none or read256)
    python3 clock-probe.py gaps              # gaps between back-to-back launches, as CUPTI records them
    python3 clock-probe.py cupti             # the events with CUPTI recording and without, alternately

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
"""
import ctypes
import importlib.util
import json
import os
import statistics
import sys
import time

import torch

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("harness", os.path.join(here, "..", "..", "runner", "harness", "harness.py"))
harness = importlib.util.module_from_spec(spec)
spec.loader.exec_module(harness)
harness.torch = torch  # the harness imports torch when a worker starts
sys.path.insert(0, os.path.join(here, "softmax"))
sys.path.insert(0, os.path.join(here, "..", "..", "kernels"))
import softmax  # noqa: E402
from timing import cases as tcases, kernel as tkernel  # noqa: E402


def kernels():
    """Nine calls from ~1 us to ~4 ms, each warmed up."""
    lib = ctypes.CDLL("libcuda.so.1")
    mod = ctypes.c_void_p()
    lib.cuModuleLoadData(ctypes.byref(mod), harness.HOLD_PTX)
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
    return {"read256": harness.fastest(harness.flush_readers(buf)), "read1g": harness.fastest(harness.flush_readers(big)),
            "zero256": lambda: buf.zero_(), "none": lambda: None}


def clocks(outpath):
    fl = flushes()
    k = kernels()
    hold = harness.Hold()
    kc = harness.KernelClock()
    stream = torch.cuda.current_stream().cuda_stream
    out = {}
    for name, f in k.items():
        n = 60 if name == "mm_large" else 800
        for fname in ("read256", "none", "zero256", "read1g"):
            if name == "mm_large" and fname != "read256":
                continue
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            ev, prev = [], 0.0
            kc.start()
            for _ in range(n):
                torch.cuda.synchronize()
                fl[fname]()
                hold.arm(stream, 0.5 * prev, 50.0)
                s.record()
                f()
                e.record()
                hold.mark(stream)
                hold.release()
                torch.cuda.synchronize()
                prev = s.elapsed_time(e)
                ev.append(prev)
            recs = kc.stop()
            if name == "empty":  # the empty kernel is a mark itself: the first mark after a hold is the call
                spans, busy, cnt, cur = [], [], [], None
                for _, nm, st, en in recs:
                    if nm == harness.HOLD_NAME:
                        cur = True
                    elif nm == harness.MARK_NAME and cur:
                        spans.append((en - st) / 1e6)
                        cur = None
                busy, cnt = spans, [1] * len(spans)
            else:
                w = [x for x in harness.call_windows(recs) if x]
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
    hold, kc = harness.Hold(), harness.KernelClock()
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

    for label, launch, pred in [("touch", lambda: hold.touch(stream, word.data_ptr()), lambda n: n == harness.TOUCH_NAME),
                                ("empty", lambda: hold.mark(stream), lambda n: n == harness.MARK_NAME),
                                ("add64k", lambda: tkernel.triton_add(x, y), lambda n: "add" in n)]:
        every, per = [], []
        for _ in range(10):
            g = run(launch, pred)
            every += g
            per.append((round(statistics.median(g), 3), round(harness.iq_mean(g), 3)))
        print(f"{label}: per round (median, interquartile mean) us: {per}")
        print(f"   all {len(every)}: median {statistics.median(every):.3f} interquartile mean {harness.iq_mean(every):.3f}")


def cupti():
    buf = torch.ones(256 << 18, dtype=torch.int32, device="cuda")
    flush = harness.fastest(harness.flush_readers(buf))
    hold, kc = harness.Hold(), harness.KernelClock()
    stream = torch.cuda.current_stream().cuda_stream
    xl, = softmax.inputs({"shape": "32768x4096", "device": "cuda"}, 1)
    xm, = softmax.inputs({"shape": "8192x2048", "device": "cuda"}, 1)
    ks = {"torch_l": lambda: softmax.torch_softmax(xl), "naive_l": lambda: softmax.naive_softmax(xl),
          "triton_l": lambda: softmax.triton_softmax(xl), "torch_m": lambda: softmax.torch_softmax(xm)}
    for f in ks.values():
        f()
        f()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def loop(f, n, on):
        if on:
            kc.start()
        xs, prev = [], 0.0
        for _ in range(n):
            torch.cuda.synchronize()
            flush()
            hold.arm(stream, 0.5 * prev, 50.0)
            s.record()
            f()
            e.record()
            if on:
                hold.mark(stream)
            hold.release()
            torch.cuda.synchronize()
            prev = s.elapsed_time(e)
            xs.append(prev)
        if on:
            kc.stop()
        return statistics.median(xs) * 1e3

    for name, f in ks.items():
        res = {"off": [], "on": []}
        for _ in range(3):
            for mode in ("off", "on"):
                res[mode].append(round(loop(f, 120, mode == "on"), 2))
        print(f"{name:9s} events median us, CUPTI off: {res['off']}  on: {res['on']}", flush=True)


if __name__ == "__main__":
    {"clocks": lambda: clocks(sys.argv[2]), "ncu": lambda: ncu(sys.argv[2]), "gaps": gaps, "cupti": cupti}[sys.argv[1]]()
