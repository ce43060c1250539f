"""Makes CPU torch pose as CUDA torch, so that tests on a machine without a
GPU run the harness's GPU code path (events, flush, spin kernel, poisoning)
for Python errors. Timings and memory are the host's; nothing here measures
a GPU."""
import ctypes
import os
import time

import torch

# FAKE_CUDA_EARLY_STARTS=N: the first N Event.query() calls answer True, as
# if the GPU had passed the event before the host enqueued what follows it
# (the spin kernel was too short, or the hold kernel timed out);
# FAKE_CUDA_EARLY_EVERY=M: so does every M-th call after them (a host that
# stalls now and then).
_early = [int(os.environ.get("FAKE_CUDA_EARLY_STARTS", "0"))]
_every = int(os.environ.get("FAKE_CUDA_EARLY_EVERY", "0"))
_queries = [0]


class _Event:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3

    def query(self):
        if _early[0] > 0:
            _early[0] -= 1
            return True
        _queries[0] += 1
        return _every > 0 and _queries[0] % _every == 0


class _Props:
    name = "Fake GPU"
    major, minor = 9, 0
    multi_processor_count = 132
    total_memory = 80 << 30
    L2_cache_size = 50 << 20
    uuid = "00000000-fake"


def _on_cpu(f):
    def g(*args, **kwargs):
        if str(kwargs.get("device", "")).startswith("cuda"):
            kwargs["device"] = "cpu"
        return f(*args, **kwargs)
    return g


for _name in ("empty", "full", "zeros", "ones", "randn", "rand", "randint", "arange", "tensor"):
    setattr(torch, _name, _on_cpu(getattr(torch, _name)))
torch.version.cuda = "12.4"
torch.cuda.is_available = lambda: True
torch.cuda.current_device = lambda: 0
torch.cuda.get_device_properties = lambda device=None: _Props()
torch.cuda.synchronize = lambda device=None: None
torch.cuda.Event = _Event
torch.cuda._sleep = lambda cycles: time.sleep(cycles / 2e9)  # a 2 GHz clock
torch.cuda.mem_get_info = lambda device=None: (40 << 30, 80 << 30)
torch.cuda.empty_cache = lambda: None


class _Stream:
    cuda_stream = 0


class _Entry:
    def __init__(self, f):
        self.f = f

    def __call__(self, *args):
        return self.f(*args)


class _Driver:
    """The few libcuda entry points the hold kernel uses (FAKE_CUDA_DRIVER=1);
    launches are counted, nothing runs."""

    def __init__(self):
        self.memory = []
        self.launches = 0
        self.cuLaunchKernel = _Entry(self._launch)  # takes argtypes, as a ctypes function does

    @staticmethod
    def _set(ref, value):
        ref._obj.value = value
        return 0

    def cuInit(self, flags):
        return 0

    def cuCtxGetCurrent(self, ctx):
        return self._set(ctx, 1)

    def cuModuleLoadData(self, module, image):
        return self._set(module, 2) if b".entry xrun_hold" in image else 218  # CUDA_ERROR_INVALID_PTX

    def cuModuleGetFunction(self, fn, module, name):
        return self._set(fn, 3)

    def cuMemHostAlloc(self, p, size, flags):
        buf = ctypes.create_string_buffer(size.value)
        self.memory.append(buf)
        return self._set(p, ctypes.addressof(buf))

    def cuMemHostGetDevicePointer_v2(self, d, host, flags):
        return self._set(d, host.value)

    def _launch(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.launches += 1
        return 0

    def cuGetErrorName(self, rc, name):
        return self._set(name, b"CUDA_ERROR_%d" % rc)


_cdll = ctypes.CDLL


def _fake_cdll(name, *args, **kwargs):
    if name == "libcuda.so.1":
        if os.environ.get("FAKE_CUDA_DRIVER") == "1":
            return _Driver()
        raise OSError("libcuda.so.1: cannot open shared object file: No such file or directory")
    return _cdll(name, *args, **kwargs)


ctypes.CDLL = _fake_cdll
torch.cuda.current_stream = lambda device=None: _Stream()


# Nsight Compute's markers: NVTX ranges and cudaProfilerStart/Stop. Under
# the fake they only count, in FAKE_CUDA_PROFILER_LOG when it is set.
def _note(what):
    path = os.environ.get("FAKE_CUDA_PROFILER_LOG")
    if path:
        with open(path, "a") as f:
            f.write(what + "\n")


torch.cuda.nvtx.range_push = lambda msg: _note("push " + msg)
torch.cuda.nvtx.range_pop = lambda: _note("pop")
torch.cuda.profiler.start = lambda: _note("start")
torch.cuda.profiler.stop = lambda: _note("stop")
