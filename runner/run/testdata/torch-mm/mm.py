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
