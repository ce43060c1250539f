"""Kernels of known, very different durations, used to check xrun's timing
method against independent tools (triton.testing.do_bench and Nsight Compute).

Three cases, chosen by duration on an H100:

* ``mm_small``  — bf16 matmul 1536 x 1536 x 1536 (cuBLAS), about 10 us
* ``add_32m``   — fp32 vector add of 32 Mi elements (Triton), about 130 us
* ``mm_large``  — bf16 matmul 8192 x 24576 x 8192 (cuBLAS), about 5 ms
"""
