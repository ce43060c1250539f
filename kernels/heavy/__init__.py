"""The kernels a nightly runs at the GPU's power cap: a square fp16 GEMM
and fp16 attention forward, each as the framework does it (cuBLAS, SDPA's
FlashAttention) and as an autotuned Triton kernel."""
