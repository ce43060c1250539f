"""The kernel clock read from CUPTI's activity API through ctypes: the
kernel, memory copy and memory set records that torch's profiler also
reads (kernelclock.ProfilerClock), without the profiler's set-up for each
batch and its processing of every record into events."""

import ctypes
import glob
import os
import struct

from .kernelclock import KernelClock

# CUpti_ActivityKind values.
KIND_MEMCPY, KIND_MEMSET, KIND_CONCURRENT_KERNEL = 1, 2, 10
KINDS = (KIND_CONCURRENT_KERNEL, KIND_MEMCPY, KIND_MEMSET)
FLUSH_FORCED = 1  # CUPTI_ACTIVITY_FLAG_FLUSH_FORCED
BUFFER_BYTES = 8 << 20  # one batch of small calls fills about 1.5 MiB
ALIGN = 8  # ACTIVITY_RECORD_ALIGNMENT

# What the clock reads of a record (packed structs, little-endian), at the
# offsets every struct version CUPTI fills shares: CUpti_ActivityKernel4
# and later (start 16, end 24, correlationId 92, name 104), and
# CUpti_ActivityMemcpy5 and CUpti_ActivityMemset4 and later (start 16, end
# 24, correlationId 44). scripts/gpu-host/cupti-offsets.sh prints them from
# a toolkit's header.
KIND = struct.Struct("<I")
KERNEL = struct.Struct("<16xQQ60xI8xQ")
COPY = struct.Struct("<16xQQ12xI")
COPY_NAMES = {KIND_MEMCPY: "memcpy", KIND_MEMSET: "memset"}


class ActivityClock(KernelClock):
    """The records through CUPTI's activity API. A batch enables the
    kernel, memory copy and memory set records; its stop disables them,
    flushes CUPTI's buffers and reads the records it needs from them.

    CUPTI delivers its records to one pair of buffer callbacks per process,
    these; torch's profiler, started in the same process, would take them
    over (the batch's reading then notes its missing records)."""

    reader = "activity"

    def __init__(self, torch, hold, word, lib=None):
        super().__init__(torch, hold, word)
        self.lib = lib if lib is not None else ctypes.CDLL(find_cupti())
        self.pool = []  # buffers to hand CUPTI again
        self.lent = {}  # aligned address: the buffer CUPTI holds
        self.full = []  # (aligned address, valid bytes) that CUPTI gave back
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        self.lib.cuptiActivityGetNextRecord.argtypes = [vp, sz, ctypes.POINTER(vp)]
        self.lib.cuptiActivityFlushAll.argtypes = [ctypes.c_uint32]
        requested = ctypes.CFUNCTYPE(None, ctypes.POINTER(vp), ctypes.POINTER(sz), ctypes.POINTER(sz))
        completed = ctypes.CFUNCTYPE(None, vp, ctypes.c_uint32, vp, sz, sz)
        # Kept on self: CUPTI calls them for the life of the process.
        self._requested = requested(self.requested)
        self._completed = completed(self.completed)
        self.check(self.lib.cuptiActivityRegisterCallbacks(self._requested, self._completed),
                   "cuptiActivityRegisterCallbacks")
        self.record = vp()

    def check(self, rc, what):
        if rc != 0:
            s = ctypes.c_char_p()
            self.lib.cuptiGetResultString(rc, ctypes.byref(s))
            raise RuntimeError("%s: %s" % (what, (s.value or b"CUptiResult %d" % rc).decode()))

    def requested(self, buf, size, max_records):
        """CUPTI asks for a buffer to fill (on any thread)."""
        b = self.pool.pop() if self.pool else ctypes.create_string_buffer(BUFFER_BYTES + ALIGN)
        addr = (ctypes.addressof(b) + ALIGN - 1) & ~(ALIGN - 1)
        self.lent[addr] = b
        buf[0] = addr
        size[0] = BUFFER_BYTES
        max_records[0] = 0

    def completed(self, ctx, stream, buf, size, valid):
        """CUPTI gives a buffer back, valid bytes of it records."""
        self.full.append((buf, valid))

    def start(self):
        self.on = True
        for k in KINDS:
            self.check(self.lib.cuptiActivityEnable(k), "cuptiActivityEnable")

    def off(self):
        """Disables the records and flushes CUPTI's buffers back."""
        self.on = False
        rc = 0
        for k in KINDS:
            rc = self.lib.cuptiActivityDisable(k) or rc
        return self.lib.cuptiActivityFlushAll(FLUSH_FORCED) or rc

    def stop(self):
        rc = self.off()
        out = self.read()
        self.check(rc, "cuptiActivityFlushAll")
        return out

    def abandon(self):
        if self.on:
            self.off()
            self.read()

    def read(self):
        """The records in the buffers CUPTI gave back, sorted by correlation
        id; the buffers go back to the pool."""
        out = []
        nxt, rec = self.lib.cuptiActivityGetNextRecord, self.record
        kind, kernel, copy = KIND.unpack_from, KERNEL.unpack_from, COPY.unpack_from
        names = {}  # a kernel's name, by CUPTI's pointer to it, for this read
        full, self.full = self.full, []
        for addr, valid in full:
            b = self.lent.pop(addr, None)
            if b is None:
                continue
            self.pool.append(b)
            view = memoryview(b)
            base = ctypes.addressof(b)
            rec.value = None
            while nxt(addr, valid, ctypes.byref(rec)) == 0:
                off = rec.value - base
                k = kind(view, off)[0]
                if k == KIND_CONCURRENT_KERNEL:
                    start, end, corr, name = kernel(view, off)
                    n = names.get(name)
                    if n is None:
                        n = names[name] = ctypes.string_at(name).decode("utf-8", "replace")
                    out.append((corr, n, start, end))
                elif k in COPY_NAMES:
                    start, end, corr = copy(view, off)
                    out.append((corr, COPY_NAMES[k], start, end))
        out.sort()
        return out


def find_cupti():
    """The libcupti to load: the one the process has loaded already
    (torch's), else one beside torch's CUDA libraries or in the toolkit."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                if "/libcupti.so" in path:
                    return path
    except OSError:
        pass
    import torch
    site = os.path.dirname(os.path.dirname(torch.__file__))
    for pattern in (site + "/nvidia/*/lib/libcupti.so*", site + "/nvidia/*/*/lib/libcupti.so*",
                    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so*", "/usr/local/cuda/lib64/libcupti.so*"):
        found = sorted(glob.glob(pattern))
        if found:
            return found[-1]
    return "libcupti.so"
