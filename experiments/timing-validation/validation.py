"""The timing-validation cases, shortest first.

* ``add_768k``: the Triton add of kernels/timing over 768 Ki fp32 elements
  (x, y -> z; 9 MiB moved), about 5 us: mostly launch and ramp;
* ``softmax_2048x1024``, ``softmax_8192x2048``: the Triton row softmax of
  softmax/ (x [rows, cols] fp32 -> y), about 7 and 41 us;
* ``mm_small``, ``add_32m``, ``mm_large``: kernels/timing's cases (a 1536^3
  bf16 cuBLAS matmul, a 32 Mi element Triton add, an 8192x24576x8192 bf16
  cuBLAS matmul), about 14 us, 131 us and 4.1 ms.

``params["scale"]`` shrinks every size on a CPU run.
"""

import torch

from timing import cases as tcases
from timing import kernel as tkernel

ADDS = {"add_768k": 768 * 1024}
SOFTMAX = {"softmax_2048x1024": (2048, 1024), "softmax_8192x2048": (8192, 2048)}


def _scale(params):
    return int(params.get("scale", 1))


def inputs(params, seed):
    name, device = params["case"], params["device"]
    g = torch.Generator(device="cpu").manual_seed(seed)
    if name in ADDS:
        n = max(4096, ADDS[name] // _scale(params))
        return (torch.randn(n, generator=g).to(device), torch.randn(n, generator=g).to(device))
    if name in SOFTMAX:
        rows, cols = SOFTMAX[name]
        rows = max(16, rows // _scale(params))
        return (torch.randn(rows, cols, generator=g).mul_(4).to(device),)
    return tcases.inputs(params, seed)


def reference(*args):
    if len(args) == 1:
        (x,) = args
        return torch.softmax(x.double(), dim=1).to(x.dtype)
    return tcases.reference(*args)


def kernel(*args):
    """The Triton softmax for one operand; kernels/timing's kernel for two."""
    if len(args) == 1:
        from softmax.softmax import triton_softmax
        return triton_softmax(*args)
    return tkernel.kernel(*args)


def flops(params):
    name = params["case"]
    if name in ADDS:
        return float(max(4096, ADDS[name] // _scale(params)))
    if name in SOFTMAX:
        rows, cols = SOFTMAX[name]
        return 5.0 * max(16, rows // _scale(params)) * cols
    return tcases.flops(params)


def bytes_moved(params):
    name = params["case"]
    if name in ADDS:
        return 12.0 * max(4096, ADDS[name] // _scale(params))
    if name in SOFTMAX:
        rows, cols = SOFTMAX[name]
        return 8.0 * max(16, rows // _scale(params)) * cols
    return tcases.bytes_moved(params)
