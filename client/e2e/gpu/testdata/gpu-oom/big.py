"""An implementation that allocates 4 TiB on the GPU: a plain cudaMalloc that
fails at once (no managed memory, nothing touched)."""

import torch


def inputs(params, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return (torch.randn(int(params["n"]), generator=g).to(params["device"]),)


def reference(x):
    return x * 2


def too_big(x):
    scratch = torch.empty(1 << 40, dtype=torch.float32, device=x.device)  # 4 TiB
    return x * 2 + scratch[:1] * 0
