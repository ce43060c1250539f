"""Builds the CUDA C++ kernels next to this file as PyTorch extensions.

torch.utils.cpp_extension.load compiles fa_wmma_v*.cu with nvcc and ninja on
first use and caches the result: the build directory is
$TORCH_EXTENSIONS_DIR/<name>_sm<NN> when that variable is set, else
/tmp/xrun-torch-extensions/<name>_sm<NN>. The target is the running device's
compute capability (sm_90 on an H100), so no generic PTX is JIT-compiled at
start. Concurrent builds of one extension are serialised by the lock file
cpp_extension keeps in the build directory.
"""

import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
_loaded = {}


def arch():
    """The running device's architecture as nvcc writes it, e.g. "90"."""
    major, minor = torch.cuda.get_device_capability()
    return f"{major}{minor}"


def load(name):
    """Builds (or loads from cache) kernels/flash_wmma/<name>.cu; returns the module."""
    if name in _loaded:
        return _loaded[name]
    if not torch.cuda.is_available():
        raise RuntimeError(f"{name} is a CUDA kernel: it needs a GPU and nvcc; run it on a CUDA host")
    from torch.utils import cpp_extension

    sm = arch()
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or "/tmp/xrun-torch-extensions"
    build_dir = os.path.join(root, f"{name}_sm{sm}")
    os.makedirs(build_dir, exist_ok=True)
    cuda_flags = ["-O3", f"-gencode=arch=compute_{sm},code=sm_{sm}", "-lineinfo"]
    if os.environ.get("FLASH_WMMA_PTXAS_VERBOSE"):
        cuda_flags.append("-Xptxas=-v")  # registers, spills, shared memory per kernel
    mod = cpp_extension.load(
        name=f"{name}_sm{sm}",
        sources=[os.path.join(HERE, f"{name}.cu")],
        extra_cflags=["-O3"],
        extra_cuda_cflags=cuda_flags,
        build_directory=build_dir,
        verbose=bool(os.environ.get("FLASH_WMMA_VERBOSE")),
    )
    _loaded[name] = mod
    return mod
