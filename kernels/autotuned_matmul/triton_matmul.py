"""A Triton matrix product, autotuned over tile shapes keyed on (M, N, K).

Each program computes one BLOCK_M x BLOCK_N tile of C, walking K in steps of
BLOCK_K with fp32 accumulation. Programs are ordered in groups of GROUP_M
rows of tiles, so that programs running at the same time share tiles of A
and B in the L2. The autotuner times every config the first time it meets a
new (M, N, K) and keeps the fastest for that key.

extra_pct (0 in use) makes every program walk extra_pct % more steps of K
past its end, on masked loads that read nothing: the dots' work on zeros,
which leaves C as it is. It is how experiments/heavy-kernels injects a
slowdown that scales with the kernel at every size (a second launch would
cost a few microseconds whatever its size).
"""

import torch
import triton
import triton.language as tl


def _config(bm, bn, bk, warps, stages):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                         num_warps=warps, num_stages=stages)


CONFIGS = [
    _config(128, 256, 64, 8, 3),
    _config(64, 256, 32, 4, 4),
    _config(128, 128, 32, 4, 4),
    _config(128, 64, 32, 4, 4),
    _config(64, 128, 32, 4, 4),
    _config(128, 32, 32, 4, 4),
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, extra_pct,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    group = pid // per_group
    first_m = group * GROUP_M
    rows = min(tiles_m - first_m, GROUP_M)
    tile_m = first_m + ((pid % per_group) % rows)
    tile_n = (pid % per_group) // rows

    offs_m = (tile_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (tile_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    steps = tl.cdiv(K, BLOCK_K)
    for k in range(0, steps + (steps * extra_pct + 50) // 100):
        left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c = acc.to(c_ptr.dtype.element_ty)
    rows_c = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols_c = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + rows_c[:, None] * stride_cm + cols_c[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(rows_c[:, None] < M) & (cols_c[None, :] < N))


def matmul(a, b, extra_pct=0):
    assert a.shape[1] == b.shape[0], "inner dimensions differ"
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), extra_pct)
    return c
