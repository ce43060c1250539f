"""A kernel tuned by an autotuner of triton.runtime.autotuner: the tests put
a stand-in for Triton's module in sys.modules before this is imported."""
from triton.runtime.autotuner import Autotuner, Config

TUNER = Autotuner(
    [Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64}, num_warps=8, num_stages=3),
     Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=4)],
    key=["n"], name="matmul_kernel")


def make_inputs(params, seed):
    return (list(range(int(params["n"]))),)


def reference(xs):
    return [2 * x for x in xs]


def double(xs):
    return TUNER.run(xs, n=len(xs))
