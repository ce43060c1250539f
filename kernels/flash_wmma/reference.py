"""Float32 reference attention.

    S = Q K^T / sqrt(D)                    [B, H, N, N]
    S[i, j] = -inf where j > i             (causal only)
    O = softmax(S, dim=-1) V               [B, H, N, D], float32

Inputs are upcast to float32 and the whole computation runs in float32; the
result is rounded once to the input dtype (the runner compares outputs of
equal dtype), so the reference carries that one rounding only.
"""

import math

import torch


def attention(q, k, v, causal):
    """O in q's dtype from q, k, v [B, H, N, D] (any float dtype)."""
    dt = q.dtype
    q, k, v = q.float(), k.float(), v.float()
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal:
        n = q.shape[-2]
        mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
        s = s.masked_fill(mask, float("-inf"))
    return (torch.softmax(s, dim=-1) @ v).to(dt)
