"""Softmax over the rows of a matrix, three ways.

    y[i, j] = exp(x[i, j] - max_k x[i, k]) / sum_k exp(x[i, k] - max_k x[i, k])

x: [rows, cols] float32 (``params["shape"]`` is "ROWSxCOLS"); y has x's shape.

* ``torch_softmax``: ``torch.softmax`` (one fused kernel);
* ``triton_softmax``: one Triton program per row, the row held in registers
  (one read of x, one write of y);
* ``naive_softmax``: max, subtract, exp, sum, divide as separate torch
  operations (five kernels, each a pass over the matrix).
"""

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # the CPU sweep runs without Triton
    triton = None


def _shape(params):
    rows, cols = (int(v) for v in str(params["shape"]).split("x"))
    return rows, cols


def inputs(params, seed):
    """x: random float32 [rows, cols], deterministic in ``seed``."""
    rows, cols = _shape(params)
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, cols, generator=g).mul_(4).to(params["device"]),)


def reference(x):
    """Softmax over rows, computed in float64."""
    return torch.softmax(x.double(), dim=1).to(x.dtype)


def torch_softmax(x):
    return torch.softmax(x, dim=1)


def naive_softmax(x):
    m = x.max(dim=1, keepdim=True).values
    e = torch.exp(x - m)
    return e / e.sum(dim=1, keepdim=True)


if triton is not None:
    @triton.jit
    def _softmax_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
        # One program per row; masked lanes read -inf so they add exp(-inf) = 0.
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        tl.store(y_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


def triton_softmax(x):
    rows, cols = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    _softmax_kernel[(rows,)](x, y, cols, BLOCK=block, num_warps=8 if block >= 2048 else 4)
    return y


def bytes_moved(params):
    """x read once, y written once."""
    rows, cols = _shape(params)
    return 2.0 * 4 * rows * cols
