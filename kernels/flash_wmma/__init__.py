"""FlashAttention forward with WMMA tensor-core tiles (seed 004).

    O = softmax(Q K^T / sqrt(D) + mask) V,   Q, K, V, O: [B, H, N, D] fp16

Files:

    reference.py     float32 math, the trusted result
    sdpa.py          torch.nn.functional.scaled_dot_product_attention, the baseline
    fa_wmma_v1.cu    WMMA Q K^T and P V, streaming softmax via store -> softmax ->
                     rebuild, synchronous K/V loads, O in shared memory (v1.py)
    fa_wmma_v2.cu    the same with a cp.async double-buffered K/V pipeline and O in
                     registers; padded or unpadded shared-memory rows (v2.py)
    build.py         builds a .cu file with torch.utils.cpp_extension.load
    inputs.py        inputs and work models
    check.py         standalone correctness and timing check on one GPU
"""
