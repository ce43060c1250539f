"""Fixture kernels with torch tensors."""
import torch


def make_inputs(params, seed):
    g = torch.Generator().manual_seed(seed)
    n = int(params["n"])
    # The fake CUDA device of the GPU-path test lives on the host.
    return torch.randn(n, n, generator=g), torch.randn(n, n, generator=g)


def matmul(a, b):
    return a @ b


def flops(params):
    return 2.0 * params["n"] ** 3
