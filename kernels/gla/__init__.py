"""Chunkwise gated linear attention (GLA), forward, intra-chunk part.

Modules, one implementation each:

- ``inputs``            input factory and the FLOP / byte / token models
- ``reference``         PyTorch reference (CPU and GPU, torch >= 1.13)
- ``triton_baseline``   Triton kernel: load -> QK^T -> decay -> SV -> accumulate,
                        one key tile after the other
- ``triton_pipelined``  the same kernel with the next key tile's loads issued
                        before the current tile's GEMMs (explicit double buffer)

The Triton modules import ``triton`` at import time; nothing here imports
them, so ``import gla`` works on a host without Triton.
"""
