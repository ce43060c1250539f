"""The array libraries a worker computes with, and the device it runs on.

numpy and torch are held by a Backend that init makes and passes to what
needs them, never assigned to module globals: the harness imports numpy when
init asks for it (so that a missing numpy is an error event, not a dead
worker) and torch only for a GPU worker; on the CPU, torch is used once the
experiment's code has imported it (importing it takes a second or two).
"""

import gc
import platform
import sys

from .errors import StageError
from .protocol import Device


class Backend:
    """numpy, torch (None until someone imports it) and whether the worker
    runs on a CUDA device."""

    def __init__(self, np, torch=None, cuda=False):
        self.np = np
        self.torch = torch
        self.cuda = cuda

    @classmethod
    def load(cls, device):
        """Imports what device ("cuda" or "cpu") needs."""
        try:
            import numpy
        except ImportError as e:
            raise StageError("harness", ImportError("the xrun harness needs numpy: %s" % e)) from e
        if device != "cuda":
            return cls(numpy, sys.modules.get("torch"))
        try:
            import torch
        except ImportError as e:
            raise StageError("harness", ImportError("device cuda needs torch: %s" % e)) from e
        if not torch.cuda.is_available():
            raise StageError("harness", RuntimeError("CUDA error: torch %s sees no CUDA device" % torch.__version__))
        return cls(numpy, torch, cuda=True)

    @property
    def device(self):
        return "cuda" if self.cuda else "cpu"

    @property
    def timer(self):
        return "cuda_events" if self.cuda else "perf_counter"

    def refresh(self):
        """Picks up torch once the experiment's code has imported it: outputs
        can only be torch tensors if it did."""
        if self.torch is None:
            self.torch = sys.modules.get("torch")

    def is_tensor(self, x):
        return self.torch is not None and isinstance(x, self.torch.Tensor)

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def versions(self):
        """(numpy, torch, triton, cuda) version strings, empty where absent."""
        torch = self.torch
        tv = torch.__version__ if torch is not None else package_version("torch")
        cuda = (torch.version.cuda or "") if torch is not None else ""
        return self.np.__version__, tv, package_version("triton"), cuda


def package_version(name):
    try:
        from importlib import metadata
        return metadata.version(name)
    except Exception:  # not installed, or metadata unreadable
        return ""


def host_device():
    return Device(kind="cpu", name=platform.processor() or platform.machine())


def cuda_device(torch):
    """The current CUDA device as ready describes it."""
    idx = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(idx)
    uuid = str(getattr(props, "uuid", "") or "")
    if uuid and not uuid.startswith("GPU-"):
        uuid = "GPU-" + uuid
    return Device(kind="cuda", name=props.name, index=idx, compute_capability="%d.%d" % (props.major, props.minor),
                  sm_count=int(props.multi_processor_count), l2_bytes=int(getattr(props, "L2_cache_size", 0) or 0),
                  memory_bytes=int(props.total_memory), uuid=uuid)


def free_after_oom(torch):
    """Frees what an out-of-memory error left behind so the next command can
    run (torch: the worker's, or None)."""
    if torch is not None and torch.cuda.is_available():
        gc.collect()
        try:
            torch.cuda.empty_cache()
        except RuntimeError:
            pass
