"""An autotuned Triton matrix product (fp16, fp32 accumulation) against cuBLAS."""
