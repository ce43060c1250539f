"""Matrix products on the CPU with torch."""
import torch


def make_inputs(params, seed):
    g = torch.Generator().manual_seed(seed)
    n = int(params["n"])
    dtype = getattr(torch, params["dtype"])
    a = torch.randn(n, n, generator=g, dtype=dtype, device=params["device"])
    b = torch.randn(n, n, generator=g, dtype=dtype, device=params["device"])
    return a, b


def reference(a, b):
    return (a.double() @ b.double()).to(a.dtype), a.sum()


def matmul(a, b):
    return a @ b, a.sum()


def transposed(a, b):
    return a @ b.t(), a.sum()


def in_place(a, b):
    a.mul_(1.0000001)
    return a @ b, a.sum()


def flops(params):
    return 2.0 * params["n"] ** 3


def illegal_address(a, b):
    """Fails the way a kernel that reads out of bounds does on a GPU."""
    raise RuntimeError("CUDA error: an illegal memory access was encountered")


class _OutOfMemoryError(RuntimeError):
    pass


def cuda_oom(a, b):
    error = getattr(torch.cuda, "OutOfMemoryError", _OutOfMemoryError)
    raise error("CUDA out of memory. Tried to allocate 80.00 GiB")
