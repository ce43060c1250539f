"""Inputs and work models of the square matrix product C = A B.

    a : [N, N]  ``dtype`` (fp16), N(0, 1)
    b : [N, N]  ``dtype``, N(0, 1/N), so that C is of order one
"""

import torch


def _n(params):
    return int(params["N"])


def _dtype(params):
    return getattr(torch, str(params.get("dtype", "float16")))


def make_inputs(params, seed):
    """Fresh (a, b) on ``params["device"]``, deterministic in ``seed``."""
    n = _n(params)
    device = torch.device(params.get("device", "cpu"))
    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed))
    a = torch.randn(n, n, generator=gen, device=device, dtype=torch.float32)
    b = torch.randn(n, n, generator=gen, device=device, dtype=torch.float32) * n ** -0.5
    return a.to(_dtype(params)), b.to(_dtype(params))


def flops(params):
    n = _n(params)
    return 2.0 * n * n * n


def bytes(params):
    """A and B read once, C written once."""
    n = _n(params)
    return 3.0 * n * n * torch.empty((), dtype=_dtype(params)).element_size()
