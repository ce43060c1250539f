"""The timed kernel: cuBLAS for the matmul cases, a Triton kernel for the add.

``kernel(a, b)`` dispatches on rank: 2-D operands go to ``torch.matmul``
(cuBLAS), 1-D operands to :func:`triton_add`.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    # One program adds BLOCK consecutive elements: z[i] = x[i] + y[i].
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(z_ptr + offs, x + y, mask=mask)


def triton_add(x, y):
    """z = x + y for contiguous 1-D fp32 tensors of equal length."""
    z = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, 4096),)
    _add_kernel[grid](x, y, z, n, BLOCK=4096)
    return z


def kernel(a, b):
    """A @ B through cuBLAS, or x + y through Triton."""
    if a.dim() == 2:
        return torch.matmul(a, b)
    return triton_add(a, b)
