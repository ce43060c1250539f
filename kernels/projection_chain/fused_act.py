"""Projection chain in two launches: one wide GEMM, one Triton activation kernel.

    Z = x W^T                                  [M, 4d+H] (cuBLAS), M = B*T
    Z[:, 0:2d]   <- SiLU(Z[:, 0:2d])           q and k, in place
    Z[:, 4d:4d+H] <- logsigmoid(Z[:, 4d:4d+H]) a, in place

The activation kernel is one launch over a grid of (row block, column block)
programs; the first 2d/BLOCK_N column blocks cover q and k, the last
ceil(H/BLOCK_N) cover a, and the v and g columns are never touched. Z is this
call's own buffer, so working in place modifies no input. The outputs are
views of Z. The bytes moved equal fused_gemm's (inputs.traffic); the launch
count drops from 4 to 2. A GEMM that applied the activations in its own
epilogue would skip the round trip entirely (inputs.traffic "ideal").

Per element:  SiLU(z) = z * sigmoid(z)
              logsigmoid(z) = min(z, 0) - log(1 + exp(-|z|))
computed in float32 and rounded once to the storage dtype.

PyTorch reference beside it: activate_reference (and
reference.projection_chain for the whole chain).
"""

import torch.nn.functional as F

try:
    import triton
    import triton.language as tl
except ImportError:  # the CPU image has no Triton; the runner skips this one
    triton = None

BLOCK_M = 64
BLOCK_N = 128


def activate_reference(z, d):
    """The same in-place activations in PyTorch (z [M, 4d+H])."""
    z[:, :2 * d] = F.silu(z[:, :2 * d])
    z[:, 4 * d:] = F.logsigmoid(z[:, 4 * d:])
    return z


if triton is not None:

    @triton.jit
    def _activate(z_ptr, M, stride_m, QK_COLS, A_START, A_COLS, QK_BLOCKS,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        is_qk = pid_n < QK_BLOCKS
        # q|k columns [0, 2d) or a columns [4d, 4d+H), by program.
        start = tl.where(is_qk, pid_n * BLOCK_N, A_START + (pid_n - QK_BLOCKS) * BLOCK_N)
        end = tl.where(is_qk, QK_COLS, A_START + A_COLS)
        cols = start + tl.arange(0, BLOCK_N)
        mask = (rows[:, None] < M) & (cols[None, :] < end)
        ptrs = z_ptr + rows[:, None] * stride_m + cols[None, :]
        z = tl.load(ptrs, mask=mask, other=0.0).to(tl.float32)
        sig = 1.0 / (1.0 + tl.exp(-z))
        silu = z * sig
        logsig = tl.minimum(z, 0.0) - tl.log(1.0 + tl.exp(-tl.abs(z)))
        out = tl.where(is_qk, silu, logsig)
        tl.store(ptrs, out.to(z_ptr.dtype.element_ty), mask=mask)


def forward(x, w):
    """Forward pass: x [B,T,d], W [4d+H, d] -> (q, k, v, g [B,T,d], a [B,T,H])."""
    if triton is None:
        raise RuntimeError("fused_act needs Triton and a GPU; run it on a CUDA host")
    b, t, d = x.shape
    n = w.shape[0]
    heads = n - 4 * d
    if (2 * d) % BLOCK_N:
        raise ValueError(f"fused_act needs 2d divisible by {BLOCK_N}; got d={d}")
    z = F.linear(x.reshape(b * t, d), w)  # [M, 4d+H], contiguous
    m = z.shape[0]
    qk_blocks = (2 * d) // BLOCK_N
    a_blocks = triton.cdiv(heads, BLOCK_N)
    grid = (triton.cdiv(m, BLOCK_M), qk_blocks + a_blocks)
    _activate[grid](z, m, z.stride(0), 2 * d, 4 * d, heads, qk_blocks,
                    BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    z = z.view(b, t, n)
    return z[..., :d], z[..., d:2 * d], z[..., 2 * d:3 * d], z[..., 3 * d:4 * d], z[..., 4 * d:]
