"""Two ways to double a vector, one of which waits for the GPU.

``syncing`` reads an element back to the host (``.item()``), so the call
returns only once the GPU has run it: nothing can be queued ahead of it.
The runner's hold kernel times out on such a call and the worker then times
it with nothing held back (timing.cover "none").
"""

import torch


def inputs(params, seed):
    """x: ``params["n"]`` random fp32 values, deterministic in ``seed``."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(params["n"], generator=g).to(params["device"]),)


def reference(x):
    return x * 2


def plain(x):
    return x * 2


def syncing(x):
    y = x * 2
    if y[0].item() != y[0].item():  # a read on the host: waits for the GPU
        raise FloatingPointError("NaN in the output")
    return y
