"""ActivityClock's reading of CUPTI's buffers, against a fake libcupti that
walks records packed at the offsets of CUPTI's structs (the GPU suite and
scripts/gpu-host/kernel-clock-cost.py read real ones)."""
import ctypes
import struct

import pytest

from xrun_harness.gpu import activityclock as ac

KERNEL_BYTES, COPY_BYTES = 200, 64  # any sizes past the fields read


def kernel(corr, name, start, end):
    rec = bytearray(KERNEL_BYTES)
    struct.pack_into("<I", rec, 0, ac.KIND_CONCURRENT_KERNEL)
    struct.pack_into("<QQ", rec, 16, start, end)
    struct.pack_into("<I", rec, 92, corr)
    struct.pack_into("<Q", rec, 104, ctypes.addressof(name))
    return bytes(rec)


def copy(kind, corr, start, end):
    rec = bytearray(COPY_BYTES)
    struct.pack_into("<I", rec, 0, kind)
    struct.pack_into("<QQ", rec, 16, start, end)
    struct.pack_into("<I", rec, 44, corr)
    return bytes(rec)


class Fn:
    """A fake library function: callable, and takes argtypes as ctypes's do."""

    def __init__(self, f):
        self.f = f

    def __call__(self, *args):
        return self.f(*args)


class FakeCupti:
    """CUPTI's activity API as the clock uses it: a buffer is asked for at
    each flush, filled with the queued records and given back."""

    def __init__(self):
        for name in dir(self):
            if name.startswith("cupti"):
                setattr(self, name, Fn(getattr(self, name)))
        self.req = self.comp = None
        self.enabled = set()
        self.queued = []  # records for the next flush
        self.walks = {}  # buffer address: (offsets of its records)
        self.disabled = []

    def cuptiActivityRegisterCallbacks(self, req, comp):
        self.req, self.comp = req, comp
        return 0

    def cuptiActivityEnable(self, k):
        self.enabled.add(k)
        return 0

    def cuptiActivityDisable(self, k):
        self.enabled.discard(k)
        self.disabled.append(k)
        return 0

    def cuptiActivityFlushAll(self, flag):
        assert flag == ac.FLUSH_FORCED and not self.enabled
        buf, size, maxn = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_size_t()
        self.req(ctypes.byref(buf), ctypes.byref(size), ctypes.byref(maxn))
        assert buf.value % ac.ALIGN == 0 and size.value == ac.BUFFER_BYTES
        offs, at = [], 0
        for r in self.queued:
            ctypes.memmove(buf.value + at, r, len(r))
            offs.append(at)
            at += len(r)
        self.walks[buf.value] = offs
        self.queued = []
        self.comp(None, 0, buf.value, size.value, at)
        return 0

    def cuptiActivityGetNextRecord(self, addr, valid, rec):
        offs = self.walks[addr]
        cur = rec._obj.value
        i = 0 if cur is None else offs.index(cur - addr) + 1
        if i >= len(offs) or offs[i] >= valid:
            return 3  # CUPTI_ERROR_MAX_LIMIT_REACHED
        rec._obj.value = addr + offs[i]
        return 0

    def cuptiGetResultString(self, rc, s):
        return 0


@pytest.fixture
def clock():
    lib = FakeCupti()
    return ac.ActivityClock(None, None, None, lib=lib), lib


def test_reads_kernels_copies_and_sets_by_correlation_id(clock):
    kc, lib = clock
    hold, mark, soft = (ctypes.create_string_buffer(n) for n in (b"xrun_hold", b"xrun_mark", b"softmax_kernel"))
    kc.start()
    assert lib.enabled == set(ac.KINDS)
    lib.queued = [kernel(12, hold, 100, 900), copy(ac.KIND_MEMSET, 10, 0, 50), kernel(14, soft, 1000, 1500),
                  kernel(15, mark, 1600, 1700), copy(ac.KIND_MEMCPY, 13, 950, 990), copy(99, 16, 0, 1)]
    recs = kc.stop()
    assert recs == [(10, "memset", 0, 50), (12, "xrun_hold", 100, 900), (13, "memcpy", 950, 990),
                    (14, "softmax_kernel", 1000, 1500), (15, "xrun_mark", 1600, 1700)]
    assert not kc.on and not lib.enabled


def test_buffers_go_back_to_the_pool(clock):
    kc, lib = clock
    name = ctypes.create_string_buffer(b"k")
    for batch in range(3):
        kc.start()
        lib.queued = [kernel(batch, name, 0, 1)]
        assert kc.stop() == [(batch, "k", 0, 1)]
    # One buffer serves every batch: the flush gives it back each time.
    assert len(kc.pool) == 1 and not kc.lent


def test_abandon_drops_the_batch(clock):
    kc, lib = clock
    name = ctypes.create_string_buffer(b"k")
    kc.start()
    lib.queued = [kernel(1, name, 0, 1)]
    kc.abandon()
    assert not kc.on and not lib.enabled and not kc.full
    kc.start()
    assert kc.stop() == []


def test_a_failed_flush_says_so(clock):
    kc, lib = clock
    lib.cuptiActivityFlushAll = lambda flag: 17
    kc.start()
    with pytest.raises(RuntimeError, match="cuptiActivityFlushAll"):
        kc.stop()
    assert not kc.on
