"""Two implementations whose kernels an autotuner tunes at their first call:
a stand-in for triton.runtime.autotuner (Triton's attributes: cache, configs,
best_config, bench_time, configs_timings), registered under Triton's module
name when Triton is not installed. Each tuning writes its start and end
to tuning.log beside this file, so that a test can see whether two
workers tuned at the same time."""
import os
import sys
import time
import types

import torch

LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tuning.log")
TUNING_S = 0.4

try:
    from triton.runtime.autotuner import Autotuner as _Real  # noqa: F401
    raise ImportError("the stand-in is for machines without Triton")
except ImportError:
    pass


class Config:
    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None):
        self.kwargs, self.num_warps, self.num_stages, self.num_ctas, self.maxnreg = kwargs, num_warps, num_stages, num_ctas, maxnreg


class Autotuner:
    def __init__(self, name, configs):
        self.configs, self.cache, self.cache_results = configs, {}, False
        self.base_fn = types.SimpleNamespace(__name__=name)

    def run(self, x):
        key = (x.shape[0], str(x.dtype))
        if key not in self.cache:
            start = time.time()
            time.sleep(TUNING_S)
            with open(LOG, "a") as f:
                f.write("%s %d %.6f %.6f\n" % (self.base_fn.__name__, key[0], start, time.time()))
            self.configs_timings = {c: [1.0 + i, 0.9 + i, 1.1 + i] for i, c in enumerate(self.configs)}
            self.bench_time = TUNING_S
            self.cache[key] = self.configs[0]
        self.best_config = self.cache[key]
        return x * 2


module = types.ModuleType("triton.runtime.autotuner")
module.Autotuner, module.Config = Autotuner, Config
sys.modules["triton.runtime.autotuner"] = module

CONFIGS = [Config({"BLOCK": 64, "SPLIT_K": 2}, num_warps=4, num_stages=2), Config({"BLOCK": 32}, num_warps=2, num_stages=3)]
A = Autotuner("kernel_a", CONFIGS)
B = Autotuner("kernel_b", CONFIGS)


def make_inputs(params, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(int(params["n"]), generator=g, device=params["device"]),)


def reference(x):
    return x * 2


def fn_a(x):
    return A.run(x)


def fn_b(x):
    return B.run(x)
