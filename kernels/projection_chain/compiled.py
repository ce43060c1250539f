"""torch.compile of the fused-GEMM chain and of the epilogue chain.

Inductor receives fused_gemm.chain (one GEMM over the concatenated W, then
the activations) and is free to fuse what follows the GEMM: by default the
GEMM stays a cuBLAS call and the activations become one generated Triton
kernel. For the backward pass AOTAutograd traces the same chain and compiles
its backward graph too. The epilogue variant compiles epilogue_unfused.chain
(RMSNorm, SiLU, multiply, GEMM). Shapes are static (dynamic=False): each
sweep point compiles once, inside the warm-up.

References: reference.projection_chain, reference.projection_chain_backward,
reference.epilogue. GPU only: the CPU image's PyTorch 1.13 has no
torch.compile.
"""

import torch

from projection_chain import epilogue_unfused, fused_gemm
from projection_chain.reference import split

_chain = None
_epilogue = None


def _compiled_chain():
    global _chain
    if _chain is None:
        _chain = torch.compile(fused_gemm.chain, dynamic=False)
    return _chain


def _compiled_epilogue():
    global _epilogue
    if _epilogue is None:
        _epilogue = torch.compile(epilogue_unfused.chain, dynamic=False)
    return _epilogue


def forward(x, w):
    """Compiled forward: x [B,T,d], W [4d+H, d] -> (q, k, v, g, a)."""
    return _compiled_chain()(x, w)


def forward_backward(x, w, dq, dk, dv, dg, da):
    """Compiled forward and backward. Returns (dx, dW_q, dW_k, dW_v, dW_g, dW_a)."""
    xl = x.detach().requires_grad_()
    wl = w.detach().requires_grad_()
    torch.autograd.backward(_compiled_chain()(xl, wl), (dq, dk, dv, dg, da))
    return (xl.grad, *split(wl.grad, x.shape[-1]))


def epilogue(o, g, w_norm, w_o):
    """Compiled epilogue: y = (RMSNorm_head(o) * w_norm * SiLU(g)) W_o^T."""
    return _compiled_epilogue()(o, g, w_norm, w_o)
