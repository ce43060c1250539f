"""Attention forward in Triton, autotuned over the tile shape.

    O = softmax(Q K^T / sqrt(D)) V,    Q, K, V, O [B, H, N, D] fp16

Each program takes BLOCK_M query rows of one (batch, head) and walks the
keys in steps of BLOCK_N with the online softmax (FlashAttention): a
running row maximum m and sum l, the accumulator rescaled by exp(m_old -
m_new) at each step, all in fp32, exponentials in base 2 with the scale
folded in. Non-causal only; N a multiple of 128. The autotuner keys on
N and D.

extra_pct (0 in use) makes every program take extra_pct % more steps past
the last key, on masked loads of nothing whose scores are -inf: the work
of a step that adds nothing to O. It is how experiments/heavy-kernels
injects a slowdown that scales with the kernel.
"""

import math

import torch
import triton
import triton.language as tl


def _config(bm, bn, warps, stages):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=warps, num_stages=stages)


CONFIGS = [
    _config(128, 64, 8, 3),
    _config(128, 128, 8, 3),
    _config(128, 64, 4, 4),
    _config(64, 64, 4, 4),
    _config(128, 32, 4, 3),
]


@triton.jit
def _step(q, k_ptr, v_ptr, base, stride_n, cols, dims, N, log2_scale, m, l, acc):
    """One block of keys: scores, the online softmax's update, P V."""
    inside = cols < N
    k_t = tl.load(k_ptr + base + cols[None, :] * stride_n + dims[:, None], mask=inside[None, :], other=0.0)  # [D, BLOCK_N]
    s = tl.where(inside[None, :], tl.dot(q, k_t) * log2_scale, float("-inf"))
    m_new = tl.maximum(m, tl.max(s, 1))
    p = tl.math.exp2(s - m_new[:, None])
    alpha = tl.math.exp2(m - m_new)
    v = tl.load(v_ptr + base + cols[:, None] * stride_n + dims[None, :], mask=inside[:, None], other=0.0)  # [BLOCK_N, D]
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
    return m_new, l * alpha + tl.sum(p, 1), acc


@triton.autotune(configs=CONFIGS, key=["N", "D"])
@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, scale, H, N,
                     stride_b, stride_h, stride_n, extra_pct,
                     D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    block = tl.program_id(0)
    bh = tl.program_id(1)
    base = (bh // H) * stride_b + (bh % H) * stride_h
    rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, D)
    q = tl.load(q_ptr + base + rows[:, None] * stride_n + dims[None, :])

    m = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, D), dtype=tl.float32)
    log2_scale = scale * 1.4426950408889634  # exp(x) = exp2(x * log2(e))
    steps = tl.cdiv(N, BLOCK_N)
    for step in range(0, steps + (steps * extra_pct + 50) // 100):
        cols = step * BLOCK_N + tl.arange(0, BLOCK_N)
        m, l, acc = _step(q, k_ptr, v_ptr, base, stride_n, cols, dims, N, log2_scale, m, l, acc)
    out = acc / l[:, None]
    tl.store(o_ptr + base + rows[:, None] * stride_n + dims[None, :], out.to(o_ptr.dtype.element_ty))


def attention(q, k, v, causal, extra_pct=0):
    """O [B, H, N, D] in q's dtype."""
    if causal:
        raise ValueError("triton_attention is non-causal only")
    bsz, heads, n, d = q.shape
    if n % 128 or d not in (64, 128):
        raise ValueError("triton_attention needs N a multiple of 128 and D of 64 or 128; got N=%d D=%d" % (n, d))
    q, k, v = (x.contiguous() for x in (q, k, v))
    o = torch.empty_like(q)

    def grid(meta):
        return (n // meta["BLOCK_M"], bsz * heads)

    attention_kernel[grid](q, k, v, o, 1.0 / math.sqrt(d), heads, n, q.stride(0), q.stride(1), q.stride(2), extra_pct, D=d)
    return o
