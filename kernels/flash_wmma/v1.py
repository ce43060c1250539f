"""FlashAttention WMMA v1 (fa_wmma_v1.cu): store -> softmax -> rebuild.

The extension is built when this module is imported on a CUDA host (see
build.py); on a host without CUDA the import succeeds and a call says why it
cannot run. Reference: reference.attention.
"""

import torch

from flash_wmma import build

_ext = build.load("fa_wmma_v1") if torch.cuda.is_available() else None


def attention(q, k, v, causal):
    """O [B, H, N, D] fp16 from q, k, v [B, H, N, D] fp16 (D 64 or 128, N % 64 == 0)."""
    if _ext is None:
        raise RuntimeError("fa_wmma_v1 is a CUDA kernel: run it on a CUDA host")
    return _ext.forward(q, k, v, bool(causal))
