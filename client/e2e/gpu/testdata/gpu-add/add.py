"""z = x + y on the GPU, checked against the same sum in float64."""

import torch


def inputs(params, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    n = int(params["n"])
    dtype = getattr(torch, params["dtype"])
    x = torch.randn(n, generator=g).to(device=params["device"], dtype=dtype)
    y = torch.randn(n, generator=g).to(device=params["device"], dtype=dtype)
    return (x, y)


def reference(x, y):
    return (x.double() + y.double()).to(x.dtype)


def torch_add(x, y):
    return torch.add(x, y)


def bytes_moved(params):
    return 3 * int(params["n"]) * torch.tensor([], dtype=getattr(torch, params["dtype"])).element_size()
