"""GLA-style input projection chain and output epilogue chain (experiment 058).

The input side of a gated linear-attention layer (GLA, Gated DeltaNet, mLSTM)
turns each token x_t in R^d into five tensors through five projections and
their activations. With W = [W_q; W_k; W_v; W_g; W_a] in R^{(4d+H) x d}
(nn.Linear layout: out x in) and H heads of size d/H:

    q = SiLU(x W_q^T)          [B, T, d]   query (feature map)
    k = SiLU(x W_k^T)          [B, T, d]   key (feature map)
    v = x W_v^T                [B, T, d]   value
    g = x W_g^T                [B, T, d]   output gate, pre-activation (its SiLU
                                            belongs to the output epilogue)
    a = logsigmoid(x W_a^T)    [B, T, H]   per-head log decay, log(alpha)

The output side (the "epilogue chain") takes the attention output o and the
gate g back to the model width:

    y = (RMSNorm_head(o) * w_norm * SiLU(g)) W_o^T     [B, T, d]

where RMSNorm_head normalises each head's d/H channels.

Implementations (one per file):

    reference.py        float32 math of both chains and of the backward pass
    unfused.py          five GEMMs and three activation kernels (8 launches)
    fused_gemm.py       one GEMM over the concatenated W, then the three
                        activations on views of its output (4 launches)
    fused_act.py        one GEMM over W, then one Triton kernel applying every
                        activation in place (2 launches)
    compiled.py         torch.compile of fused_gemm (Inductor chooses the fusion)
    epilogue_unfused.py RMSNorm, SiLU, multiply, GEMM as separate kernels
    epilogue_fused.py   one Triton kernel for norm * gate, then the GEMM

HBM traffic models (bytes, element size s, M = B*T rows; the derivation is in
inputs.py next to the code that computes it) are what each implementation
must move at the least, kernel by kernel; the seed's "fused" figure is the
ideal one-kernel GEMM-with-epilogue bound and is reported as `ideal`.
"""
