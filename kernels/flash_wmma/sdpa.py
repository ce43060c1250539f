"""Baseline: PyTorch's scaled_dot_product_attention.

    O = SDPA(Q, K, V, is_causal=causal),   Q, K, V [B, H, N, D]

On a GPU with fp16 inputs PyTorch picks its fused FlashAttention backend.
PyTorch before 2.0 has no SDPA: there the same softmax(Q K^T / sqrt(D)) V is
written out in the input dtype (the CPU image's PyTorch 1.13), so the CPU
sweep still checks this implementation's semantics. Reference:
reference.attention.
"""

import math

import torch
import torch.nn.functional as F


def attention(q, k, v, causal):
    """O [B, H, N, D] in the input dtype."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v
