"""Fused dual GEMM with a SwiGLU epilogue at small M: H = silu(A B1) * (A B2).

Modules, one implementation each:

- ``inputs``        input factory, FLOP / byte models and the CTA-count metrics
- ``reference``     PyTorch reference in float32 (CPU and GPU, torch >= 1.13)
- ``unfused``       two torch.matmul calls (cuBLAS on a GPU) and the elementwise epilogue
- ``triton_fused``  one Triton kernel: both GEMMs share each loaded A tile, epilogue fused

The Triton module imports ``triton`` at import time; nothing here imports
it, so ``import dual_gemm`` works on a host without Triton.
"""
