"""PyTorch reference: chunkwise GLA forward, intra-chunk part.

Gated linear attention with a scalar forget gate per head and step keeps a
state S_t = a_t S_{t-1} + k_t v_t^T and reads o_t = S_t^T q_t, with
log a_t = g_t <= 0. Unrolled, o_t = sum_{s <= t} exp(G_t - G_s) (q_t . k_s) v_s
where G is the running sum of g. The chunkwise form cuts T into chunks of C
steps and splits each output into the part from its own chunk and the part
carried in by the state from earlier chunks. This module computes the first:

    b_i    = g_{c0} + ... + g_{c0+i}                 (cumulative log gate inside the chunk)
    S      = Q K^T                                    [C, C]   GEMM 1
    D_ij   = exp(b_i - b_j) if i >= j else 0          [C, C]   decay mask
    O      = (S * D) V                                [C, dv]  GEMM 2

for every chunk of every (batch, head). This is the GEMM -> elementwise ->
GEMM sandwich of the seed (MVE 039): its FLOP figures equal exactly the two
dense C x C products per chunk, with no inter-chunk term, so the state
recurrence (O += exp(b) Q S_prev; S_next = exp(b_C) S_prev + (K exp(b_C - b))^T V)
is not part of the measured kernel here either.

The scalar gate is what makes the decay an elementwise C x C mask (the
seed's S = S * D); GLA's per-key-dimension gates would fold the decay into
Q and K instead.

Shapes: q, k [B, H, T, d]; v [B, H, T, dv]; g [B, H, N, C] with T = N C.
Returns o [B, H, T, dv] in float32. Computed in float32 from the given
operands; uses only torch 1.13 operations so it runs on the CPU base image.
"""

import torch


def chunk_gla_intra(q, k, v, g):
    """o = (Q K^T * D) V per chunk, float32 [B, H, T, dv]."""
    B, H, T, d = q.shape
    dv = v.shape[-1]
    N, C = g.shape[-2], g.shape[-1]
    qf = q.float().reshape(B, H, N, C, d)
    kf = k.float().reshape(B, H, N, C, d)
    vf = v.float().reshape(B, H, N, C, dv)
    b = g.float().cumsum(-1)  # [B, H, N, C]
    s = qf @ kf.transpose(-1, -2)  # [B, H, N, C, C]
    causal = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
    decay = (b[..., :, None] - b[..., None, :]).masked_fill(~causal, float("-inf")).exp()
    o = (s * decay) @ vf  # [B, H, N, C, dv]
    return o.reshape(B, H, T, dv)


def recurrent_gla(q, k, v, g):
    """The same outputs from the step-by-step recurrence, state reset at each chunk start.

    S_t = exp(g_t) S_{t-1} + k_t v_t^T, o_t = S_t^T q_t, with S = 0 before the
    first step of every chunk. O(T d dv) and slow: a cross-check of the
    chunkwise form on small shapes, not a benchmark implementation.
    """
    B, H, T, d = q.shape
    dv = v.shape[-1]
    C = g.shape[-1]
    gf = g.float().reshape(B, H, T)
    qf, kf, vf = q.float(), k.float(), v.float()
    o = torch.empty(B, H, T, dv, dtype=torch.float32, device=q.device)
    state = torch.zeros(B, H, d, dv, dtype=torch.float32, device=q.device)
    for t in range(T):
        if t % C == 0:
            state = torch.zeros_like(state)
        state = gf[:, :, t, None, None].exp() * state + kf[:, :, t, :, None] * vf[:, :, t, None, :]
        o[:, :, t] = (qf[:, :, t, :, None] * state).sum(-2)
    return o
