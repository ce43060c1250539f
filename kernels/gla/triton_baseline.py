"""Triton baseline: chunkwise GLA intra-chunk forward, one key tile after the other.

Math (see ``gla.reference``): for each chunk of C steps, with b the
cumulative log gate inside the chunk,

    O = (Q K^T * D) V,   D_ij = exp(b_i - b_j) for i >= j, else 0.

Tiling: a program owns one (batch, head) and one block of BLOCK_Q query rows
of a chunk. It walks the key tiles of BLOCK_K rows of that chunk from the
chunk start up to the end of its query block (the causal diagonal) and for
each one, in order,

    load   K_j [BLOCK_K, d], V_j [BLOCK_K, dv], b_j [BLOCK_K]
    S    = Q K_j^T                       [BLOCK_Q, BLOCK_K]   tensor cores
    P    = S * exp(b_q - b_j), causal    [BLOCK_Q, BLOCK_K]   CUDA cores
    acc += P V_j                         [BLOCK_Q, dv]        tensor cores

P is rounded to the operand dtype (float16 here) for the second GEMM; both GEMMs
accumulate in float32 and O is written in float32.

``num_stages`` is Triton's own software pipelining of the loop's loads.
The default, 1, turns it off: this is the sequential kernel of the seed.
With ``num_stages=3`` the same source becomes the compiler-pipelined
variant, which tests the seed's claim that Triton already overlaps the
loads by itself.

Grid: (T / BLOCK_Q, B H). Requires T a multiple of C, and C a multiple of
BLOCK_Q and BLOCK_K.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _gla_intra_fwd(q_ptr, k_ptr, v_ptr, b_ptr, o_ptr, T,
                   CHUNK: tl.constexpr, D: tl.constexpr, DV: tl.constexpr,
                   BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_q = tl.program_id(0)
    pid_bh = tl.program_id(1)
    q0 = pid_q * BLOCK_Q
    c0 = (q0 // CHUNK) * CHUNK
    row0 = pid_bh.to(tl.int64) * T

    offs_q = q0 + tl.arange(0, BLOCK_Q)
    offs_d = tl.arange(0, D)
    offs_v = tl.arange(0, DV)
    q = tl.load(q_ptr + (row0 + offs_q)[:, None] * D + offs_d[None, :])  # [BLOCK_Q, D]
    b_q = tl.load(b_ptr + row0 + offs_q)  # [BLOCK_Q]
    acc = tl.zeros([BLOCK_Q, DV], dtype=tl.float32)

    n_tiles = (q0 + BLOCK_Q - c0) // BLOCK_K
    for j in range(n_tiles):
        offs_k = c0 + j * BLOCK_K + tl.arange(0, BLOCK_K)
        k = tl.load(k_ptr + (row0 + offs_k)[:, None] * D + offs_d[None, :])  # [BLOCK_K, D]
        v = tl.load(v_ptr + (row0 + offs_k)[:, None] * DV + offs_v[None, :])  # [BLOCK_K, DV]
        b_k = tl.load(b_ptr + row0 + offs_k)  # [BLOCK_K]

        s = tl.dot(q, tl.trans(k))  # [BLOCK_Q, BLOCK_K]
        causal = offs_q[:, None] >= offs_k[None, :]
        decay = tl.exp(tl.where(causal, b_q[:, None] - b_k[None, :], float("-inf")))
        p = (s * decay).to(v.dtype)
        acc += tl.dot(p, v)  # [BLOCK_Q, DV]

    tl.store(o_ptr + (row0 + offs_q)[:, None] * DV + offs_v[None, :], acc)


def default_blocks(chunk):
    """Tile sizes used when none are given: BLOCK_Q = min(C, 64); BLOCK_K = C/4 within [16, 64].

    A chunk of 64 is walked in four key tiles of 16 and a chunk of 256 in
    up to four tiles of 64, so every program has a loop to pipeline.
    """
    return min(chunk, 64), min(64, max(16, chunk // 4))


def cumulative_gates(g, T):
    """b = running sum of g inside each chunk, float32 [B, H, T]."""
    B, H = g.shape[0], g.shape[1]
    return g.float().cumsum(-1).reshape(B, H, T).contiguous()


def chunk_gla_intra(q, k, v, g, BLOCK_Q=None, BLOCK_K=None, num_warps=4, num_stages=1):
    """O = (Q K^T * D) V per chunk; float32 [B, H, T, dv]."""
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
    _gla_intra_fwd[grid](q, k, v, b, o, T, CHUNK=C, D=d, DV=dv,
                         BLOCK_Q=BLOCK_Q, BLOCK_K=BLOCK_K,
                         num_warps=int(num_warps), num_stages=int(num_stages))
    return o
