"""Triton pipelined: chunkwise GLA intra-chunk forward with the next key tile prefetched.

Math and tiling are those of ``gla.triton_baseline`` (see it and
``gla.reference``): per chunk, O = (Q K^T * D) V with
D_ij = exp(b_i - b_j) for i >= j.

The difference is the order of work in the key-tile loop. Two register
buffers hold key tiles: before the GEMMs and the decay of tile j, the
loads of tile j + 1 are issued, so their memory latency runs under

    S    = Q K_j^T                       [BLOCK_Q, BLOCK_K]   tensor cores
    P    = S * exp(b_q - b_j), causal    [BLOCK_Q, BLOCK_K]   CUDA cores
    acc += P V_j                         [BLOCK_Q, dv]        tensor cores

This is the software form of the producer/consumer overlap that
FlashAttention-3 gets from warp specialisation on Hopper. The prefetch past
the last tile is masked off (no redundant load, unlike the seed's clamped
reload), and the compiler's own pipelining is off by default
(``num_stages=1``), so the only difference from the baseline is the
explicit double buffer.

Grid: (T / BLOCK_Q, B H). Requires T a multiple of C, and C a multiple of
BLOCK_Q and BLOCK_K.
"""

import torch
import triton
import triton.language as tl

from gla.triton_baseline import cumulative_gates, default_blocks


@triton.jit
def _gla_intra_fwd_pipelined(q_ptr, k_ptr, v_ptr, b_ptr, o_ptr, T,
                             CHUNK: tl.constexpr, D: tl.constexpr, DV: tl.constexpr,
                             BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_q = tl.program_id(0)
    pid_bh = tl.program_id(1)
    q0 = pid_q * BLOCK_Q
    c0 = (q0 // CHUNK) * CHUNK
    k_end = q0 + BLOCK_Q
    row0 = pid_bh.to(tl.int64) * T

    offs_q = q0 + tl.arange(0, BLOCK_Q)
    offs_d = tl.arange(0, D)
    offs_v = tl.arange(0, DV)
    q = tl.load(q_ptr + (row0 + offs_q)[:, None] * D + offs_d[None, :])  # [BLOCK_Q, D]
    b_q = tl.load(b_ptr + row0 + offs_q)  # [BLOCK_Q]
    acc = tl.zeros([BLOCK_Q, DV], dtype=tl.float32)

    # Prologue: tile 0 into the "next" buffer.
    offs_n = c0 + tl.arange(0, BLOCK_K)
    k_n = tl.load(k_ptr + (row0 + offs_n)[:, None] * D + offs_d[None, :])  # [BLOCK_K, D]
    v_n = tl.load(v_ptr + (row0 + offs_n)[:, None] * DV + offs_v[None, :])  # [BLOCK_K, DV]
    b_n = tl.load(b_ptr + row0 + offs_n)  # [BLOCK_K]

    n_tiles = (k_end - c0) // BLOCK_K
    for j in range(n_tiles):
        # Swap buffers: the prefetched tile becomes the current one.
        offs_k, k, v, b_k = offs_n, k_n, v_n, b_n

        # Issue tile j + 1's loads before tile j's arithmetic.
        offs_n = offs_k + BLOCK_K
        live = offs_n < k_end  # all false on the last tile: nothing is fetched
        k_n = tl.load(k_ptr + (row0 + offs_n)[:, None] * D + offs_d[None, :], mask=live[:, None], other=0.0)
        v_n = tl.load(v_ptr + (row0 + offs_n)[:, None] * DV + offs_v[None, :], mask=live[:, None], other=0.0)
        b_n = tl.load(b_ptr + row0 + offs_n, mask=live, other=0.0)

        s = tl.dot(q, tl.trans(k))  # [BLOCK_Q, BLOCK_K]
        causal = offs_q[:, None] >= offs_k[None, :]
        decay = tl.exp(tl.where(causal, b_q[:, None] - b_k[None, :], float("-inf")))
        p = (s * decay).to(v.dtype)
        acc += tl.dot(p, v)  # [BLOCK_Q, DV]

    tl.store(o_ptr + (row0 + offs_q)[:, None] * DV + offs_v[None, :], acc)


def chunk_gla_intra(q, k, v, g, BLOCK_Q=None, BLOCK_K=None, num_warps=4, num_stages=1):
    """O = (Q K^T * D) V per chunk, next key tile prefetched; float32 [B, H, T, dv]."""
    B, H, T, d = q.shape
    dv = v.shape[-1]
    C = g.shape[-1]
    bq, bk = default_blocks(C)
    BLOCK_Q = int(BLOCK_Q or bq)
    BLOCK_K = int(BLOCK_K or bk)
    if T % C or C % BLOCK_Q or C % BLOCK_K:
        raise ValueError("need T %% C == 0 and C a multiple of BLOCK_Q and BLOCK_K (T=%d C=%d BLOCK_Q=%d BLOCK_K=%d)"
                         % (T, C, BLOCK_Q, BLOCK_K))
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    b = cumulative_gates(g, T)
    o = torch.empty(B, H, T, dv, device=q.device, dtype=torch.float32)
    grid = (T // BLOCK_Q, B * H)
    _gla_intra_fwd_pipelined[grid](q, k, v, b, o, T, CHUNK=C, D=d, DV=dv,
                                   BLOCK_Q=BLOCK_Q, BLOCK_K=BLOCK_K,
                                   num_warps=int(num_warps), num_stages=int(num_stages))
    return o
