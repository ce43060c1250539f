"""CUPTI's two kernel records against Nsight Compute, one process per run.

    python3 cupti-kinds.py    # one JSON line: per case and record kind, the median kernel duration (us)

torch's profiler (the runner's kernel clock) reads CUPTI's concurrent
kernel records (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL): a kernel from its
first block's start to its last block's end, about 1.2 us under Nsight
Compute's gpu__time_duration at 5 us. CUPTI also has serialized kernel
records (CUPTI_ACTIVITY_KIND_KERNEL), which run every kernel on its own.
This script reads both through CUPTI's activity API directly (ctypes, the
libcupti that torch ships with), for the three small validation cases
launched as independent.py launches them for ncu (the runner's read flush,
a sync, the kernel, a sync), 200 launches per case and kind, and prints the
medians past the first 20, so that process-spread.sh can set them beside
ncu's.
"""
import ctypes as C
import glob
import json
import os
import statistics
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "..", "kernels"))
import validation  # noqa: E402

KIND_KERNEL, KIND_CONCURRENT_KERNEL = 3, 10
# Offsets in every CUpti_ActivityKernel version (cupti_activity.h).
OFF_START, OFF_END, OFF_NAME = 16, 24, 104
CASES = ["add_768k", "softmax_2048x1024", "mm_small"]


def libcupti():
    roots = [os.path.dirname(torch.__file__)] + [p for p in sys.path if p.endswith("site-packages")]
    for r in roots:
        for pat in ("../nvidia/*/lib/libcupti.so*", "nvidia/*/lib/libcupti.so*", "lib/libcupti.so*"):
            hits = sorted(glob.glob(os.path.join(r, pat)))
            if hits:
                return C.CDLL(hits[0])
    for p in glob.glob("/usr/local/cuda*/extras/CUPTI/lib64/libcupti.so*"):
        return C.CDLL(p)
    raise SystemExit("no libcupti found")


class Records:
    BUF = 8 << 20

    def __init__(self):
        self.lib = libcupti()
        self.bufs, self.out = {}, []
        req_t = C.CFUNCTYPE(None, C.POINTER(C.c_void_p), C.POINTER(C.c_size_t), C.POINTER(C.c_size_t))
        done_t = C.CFUNCTYPE(None, C.c_void_p, C.c_uint32, C.c_void_p, C.c_size_t, C.c_size_t)
        self.req, self.done = req_t(self._request), done_t(self._complete)
        self.check(self.lib.cuptiActivityRegisterCallbacks(self.req, self.done), "cuptiActivityRegisterCallbacks")

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError("%s: CUPTI error %d" % (what, rc))

    def _request(self, buf, size, maxrec):
        b = C.create_string_buffer(self.BUF + 8)
        addr = (C.addressof(b) + 7) & ~7
        self.bufs[addr] = b
        buf[0], size[0], maxrec[0] = addr, self.BUF, 0

    def _complete(self, ctx, stream, buf, size, valid):
        rec = C.c_void_p(0)
        while self.lib.cuptiActivityGetNextRecord(C.c_void_p(buf), C.c_size_t(valid), C.byref(rec)) == 0:
            p = rec.value
            kind = C.c_uint32.from_address(p).value
            if kind in (KIND_KERNEL, KIND_CONCURRENT_KERNEL):
                name = C.c_char_p.from_address(p + OFF_NAME).value or b""
                self.out.append((kind, name.decode(errors="replace"),
                                 C.c_uint64.from_address(p + OFF_START).value, C.c_uint64.from_address(p + OFF_END).value))
        self.bufs.pop(buf, None)

    def collect(self, kind, f):
        """Runs f with kind's records on and returns them."""
        self.out = []
        self.check(self.lib.cuptiActivityEnable(kind), "cuptiActivityEnable")
        f()
        torch.cuda.synchronize()
        self.check(self.lib.cuptiActivityDisable(kind), "cuptiActivityDisable")
        self.check(self.lib.cuptiActivityFlushAll(1), "cuptiActivityFlushAll")
        return [r for r in self.out if r[0] == kind]


def main():
    buf = torch.ones(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    total = torch.zeros((), dtype=torch.float32, device="cuda")
    rec = Records()
    out = {}
    for case in CASES:
        args = validation.inputs({"case": case, "device": "cuda"}, seed=1)
        for _ in range(3):
            validation.kernel(*args)
        torch.cuda.synchronize()
        flush = rec.collect(KIND_CONCURRENT_KERNEL, lambda: torch.sum(buf.view(torch.float32), 0, out=total))
        flush_names = {n for _, n, _, _ in flush}

        def launches():
            for _ in range(200):
                torch.sum(buf.view(torch.float32), 0, out=total)
                torch.cuda.synchronize()
                validation.kernel(*args)
                torch.cuda.synchronize()
        for label, kind in (("serialized", KIND_KERNEL), ("concurrent", KIND_CONCURRENT_KERNEL)):
            ks = sorted((s, e, n) for _, n, s, e in rec.collect(kind, launches) if n not in flush_names)
            if len(ks) < 200:
                raise SystemExit("%s %s: %d kernel records for 200 launches" % (case, label, len(ks)))
            per = len(ks) // 200
            durs = [(ks[i * per + per - 1][1] - ks[i * per][0]) / 1e3 for i in range(200)]
            out.setdefault(case, {})[label] = round(statistics.median(durs[20:]), 3)
            out[case]["kernels"] = per
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
