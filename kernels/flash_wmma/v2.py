"""FlashAttention WMMA v2 (fa_wmma_v2.cu): cp.async K/V pipeline, O in registers.

Keyword parameters (an implementation's `params:` in xrun.yaml):

    stages  2: tile j+1 loads while tile j computes (default);
            1: cp.async with no overlap
    pad     8: shared-memory rows padded by 16 bytes (default); 0: unpadded

The extension is built when this module is imported on a CUDA host (see
build.py). Reference: reference.attention.
"""

import torch

from flash_wmma import build

_ext = build.load("fa_wmma_v2") if torch.cuda.is_available() else None


def attention(q, k, v, causal, stages=2, pad=8):
    """O [B, H, N, D] fp16 from q, k, v [B, H, N, D] fp16 (D 64 or 128, N % 64 == 0)."""
    if _ext is None:
        raise RuntimeError("fa_wmma_v2 is a CUDA kernel: run it on a CUDA host")
    return _ext.forward(q, k, v, bool(causal), int(stages), int(pad))
