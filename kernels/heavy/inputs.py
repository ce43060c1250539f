"""Inputs and work models of the two operations, by ``params["op"]``.

    op = gemm:       a, b [N, N] fp16 (autotuned_matmul.inputs)
    op = attention:  q, k, v [B, H, N, D] fp16, non-causal (flash_wmma.inputs):
                     B = 4, H = 32, D = 128 unless the case says otherwise
"""

from autotuned_matmul import inputs as gemm
from flash_wmma import inputs as attention

# The attention cases' shape besides the sequence length N.
ATTENTION = {"B": 4, "H": 32, "D": 128, "causal": False}


def attention_params(params):
    p = dict(ATTENTION)
    p.update(params)
    return p


def make_inputs(params, seed):
    if params["op"] == "gemm":
        return gemm.make_inputs(params, seed)
    return attention.inputs(attention_params(params), seed)


def flops(params):
    if params["op"] == "gemm":
        return gemm.flops(params)
    return attention.flops(attention_params(params))


def bytes(params):
    if params["op"] == "gemm":
        return gemm.bytes(params)
    return attention.bytes(attention_params(params))
