"""Fused dual GEMM with a SwiGLU epilogue, in Triton.

    X1 = A B1,  X2 = A B2,  H = silu(X1) * X2,  silu(x) = x sigmoid(x)

Shapes: a [M, K], b1 [K, N], b2 [K, N] (bf16); H [M, N] in a's dtype.

One program computes one [BLOCK_M, BLOCK_N] tile of H. It walks K in steps
of BLOCK_K; each step loads one A tile [BLOCK_M, BLOCK_K] and the two weight
tiles [BLOCK_K, BLOCK_N], and feeds the same A tile to both products
(two float32 accumulators). The epilogue applies silu(X1) * X2 in float32
and writes H once, so neither product goes back to device memory.

At small M (40 to 248 rows) the work is a few rows of tiles across N, and
the launch has ceil(M / BLOCK_M) ceil(N / BLOCK_N) programs (CTAs): with
N = 4096 that is 16 CTAs for 128 x 256 tiles and 64 for 64 x 64, against
132 SMs on an H100. The tile shape is the experiment's variable: the seed's
claim is that the CTA count, not per-CTA efficiency, decides the time.

Programs are ordered M-fastest, so the programs that share a weight tile
(same N block, different M blocks) run together and read it from L2.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _dual_gemm_swiglu(a_ptr, b1_ptr, b2_ptr, h_ptr, M, N, K,
                      stride_am, stride_ak, stride_bk, stride_bn, stride_hm, stride_hn,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    m_tiles = tl.cdiv(M, BLOCK_M)
    pid_m = pid % m_tiles
    pid_n = pid // m_tiles

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak  # [BLOCK_M, BLOCK_K]
    b_off = offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn  # [BLOCK_K, BLOCK_N]
    m_ok = offs_m[:, None] < M
    n_ok = offs_n[None, :] < N

    acc1 = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    acc2 = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for kt in range(tl.cdiv(K, BLOCK_K)):
        k_left = K - kt * BLOCK_K
        a = tl.load(a_ptrs, mask=m_ok & (offs_k[None, :] < k_left), other=0.0)
        b_mask = (offs_k[:, None] < k_left) & n_ok
        w1 = tl.load(b1_ptr + b_off, mask=b_mask, other=0.0)
        w2 = tl.load(b2_ptr + b_off, mask=b_mask, other=0.0)
        acc1 = tl.dot(a, w1, acc1)  # the A tile is loaded once and used twice
        acc2 = tl.dot(a, w2, acc2)
        a_ptrs += BLOCK_K * stride_ak
        b_off += BLOCK_K * stride_bk

    h = acc1 * tl.sigmoid(acc1) * acc2
    h_ptrs = h_ptr + offs_m[:, None] * stride_hm + offs_n[None, :] * stride_hn
    tl.store(h_ptrs, h.to(h_ptr.dtype.element_ty), mask=m_ok & n_ok)


def launch_config(BLOCK_M, BLOCK_N, BLOCK_K):
    """Warps and pipeline stages for a tile shape when none are given.

    8 warps once the two accumulators pass 2 x 64 x 128 floats (fewer spills);
    as many stages (at most 4) as fit in 200 KiB of shared memory, one stage
    holding an A tile and two weight tiles in bf16.
    """
    num_warps = 8 if BLOCK_M * BLOCK_N > 64 * 128 else 4
    stage_bytes = (BLOCK_M * BLOCK_K + 2 * BLOCK_K * BLOCK_N) * 2
    num_stages = max(1, min(4, (200 * 1024) // stage_bytes))
    return num_warps, num_stages


def dual_gemm_swiglu(a, b1, b2, BLOCK_M=64, BLOCK_N=128, BLOCK_K=64, num_warps=None, num_stages=None):
    """silu(a @ b1) * (a @ b2) in one kernel, [M, N] in a's dtype."""
    M, K = a.shape
    N = b1.shape[1]
    if b1.shape != (K, N) or b2.shape != (K, N) or b1.stride() != b2.stride():
        raise ValueError("b1 and b2 must both be [K, N] = [%d, %d] with the same layout; got %s %s and %s %s"
                         % (K, N, tuple(b1.shape), b1.stride(), tuple(b2.shape), b2.stride()))
    BLOCK_M, BLOCK_N, BLOCK_K = int(BLOCK_M), int(BLOCK_N), int(BLOCK_K)
    warps, stages = launch_config(BLOCK_M, BLOCK_N, BLOCK_K)
    h = torch.empty(M, N, device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    _dual_gemm_swiglu[grid](a, b1, b2, h, M, N, K,
                            a.stride(0), a.stride(1), b1.stride(0), b1.stride(1), h.stride(0), h.stride(1),
                            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                            num_warps=int(num_warps or warps), num_stages=int(num_stages or stages))
    return h
