"""The time command: one batch of samples of one case (PROTOCOL.md, "time").

A worker makes a case's inputs once per (params, seed) and keeps them for
later batches; the first batch of those inputs makes an untimed call first
(compilation, autotuning, lazy initialisation). Each batch warms up, then
samples until its stopping rule says so: on the host with perf_counter, on
a GPU through gpu.sampler.
"""

import gc
import json
import time
from dataclasses import dataclass

from .protocol import Samples

# The most samples one batch takes when the command sets no max_samples.
SAMPLE_CAP = 1000000


@dataclass(frozen=True)
class StopRule:
    """When a batch stops: at max_n samples, or once it has min_n and
    either budget_ms of measured time or wall_ms of wall time."""
    min_n: int
    max_n: int
    budget_ms: float
    wall_ms: float

    @classmethod
    def of(cls, t):
        """The rule of a protocol.Time command."""
        min_n = max(1, t.min_samples)
        max_n = max(min_n, t.max_samples or SAMPLE_CAP)
        return cls(min_n, max_n, t.budget_ms, t.wall_ms or 4 * t.budget_ms)

    def done(self, n, total_ms, elapsed_ms):
        """After a kept sample: n samples, total_ms of them, elapsed_ms of wall time."""
        return n >= self.max_n or (n >= self.min_n and (total_ms >= self.budget_ms or elapsed_ms >= self.wall_ms))

    def out_of_time(self, n, elapsed_ms):
        """After a discarded sample: the batch has its minimum and its wall time is spent."""
        return n >= self.min_n and elapsed_ms >= self.wall_ms


def warmed_up(n, elapsed_ms, last_ms, warmup_ms, first):
    """Whether a warm-up of n calls, elapsed_ms in all and last_ms for the
    latest, is done: warmup_ms have passed and, the first time for these
    inputs, at least 3 calls, and 5 when one call is long (5 calls > warmup_ms)."""
    if elapsed_ms < warmup_ms:
        return False
    return not first or (n >= 3 and (n >= 5 or 5 * last_ms <= warmup_ms))


def warmup(call, sync, warmup_ms, first):
    """Runs call until warmed_up; returns the calls made, the time they took
    (ms) and the median time to enqueue one (ms)."""
    t0 = time.perf_counter()
    n = 0
    enq = []
    while True:
        s = time.perf_counter()
        call()
        enq.append((time.perf_counter() - s) * 1e3)
        sync()
        dt = (time.perf_counter() - s) * 1e3
        n += 1
        el = (time.perf_counter() - t0) * 1e3
        if warmed_up(n, el, dt, warmup_ms, first):
            break
    enq.sort()
    return n, el, enq[len(enq) // 2]


def sample_host(call, rule):
    """perf_counter samples (ms) of call until rule says stop."""
    clock = time.perf_counter_ns
    samples = []
    total = 0.0
    t0 = clock()
    while True:
        s = clock()
        call()
        ms = (clock() - s) / 1e6
        samples.append(ms)
        total += ms
        if rule.done(len(samples), total, (clock() - t0) / 1e6):
            return samples


class Batches:
    """Answers time commands for one worker: keeps the current case's
    inputs, whether they are warmed up, their CUDA graph and whether their
    calls are too long for the kernel clock (gpu is a gpu.sampler.Sampler,
    None on the host)."""

    def __init__(self, be, code, gpu=None, cuda_graph=False):
        self.be = be
        self.code = code
        self.gpu = gpu
        self.cuda_graph = cuda_graph
        self.key = None
        self.inputs = None
        self.warmed = False
        self.graph = None
        self.long_call = None  # why these inputs' calls skip the kernel clock ("": they do not; None: unknown)

    @staticmethod
    def key_of(params, seed):
        return json.dumps(params, sort_keys=True) + "/" + str(seed)

    def drop(self):
        """Lets go of the current inputs and what was made from them."""
        self.inputs = self.graph = self.key = None
        gc.collect()
        if self.be.cuda:
            self.be.torch.cuda.empty_cache()

    def adopt(self, params, seed, inputs):
        """Makes inputs, which the correctness check made for (params, seed)
        and called the implementation on, the current ones."""
        if self.key is not None:
            self.drop()
        self.inputs, self.key = inputs, self.key_of(params, seed)
        self.warmed = False
        self.long_call = None

    def use(self, params, seed):
        """Makes the inputs of (params, seed) the current ones, unless they are."""
        key = self.key_of(params, seed)
        if key == self.key:
            return
        self.drop()
        self.inputs = self.code.make_inputs(params, seed)
        self.key = key
        self.warmed = False
        self.long_call = None

    def batch(self, t, params):
        """One batch of samples for a protocol.Time command on case params."""
        self.use(params, t.seed)
        args, kwargs = self.inputs
        code = self.code

        def call():
            return code.call_fn(args, kwargs)

        first = not self.warmed
        if first:
            call()  # untimed: compilation, autotuning, lazy initialisation
            self.be.sync()
            if self.cuda_graph:
                self.graph = self.gpu.capture(call)
        if self.graph is not None:
            call = self.graph.replay
        wcalls, wms, enqueue_ms = warmup(call, self.be.sync, t.warmup_ms, first)
        self.warmed = True
        if self.long_call is None and self.gpu is not None:
            self.long_call = self.gpu.long_call(call, t, enqueue_ms)
        ev = Samples(samples_ms=[], warmup_calls=wcalls, warmup_ms=wms, timer=self.be.timer, sampling_ms=0.0)
        rule = StopRule.of(t)
        # No garbage collection while sampling (as timeit does): a collection
        # stalls the host for up to milliseconds, which a GPU sample pays
        # as an idle gap and a CPU sample as time.
        collecting = gc.isenabled()
        gc.disable()
        t0 = time.perf_counter()
        try:
            if self.gpu is not None:
                self.gpu.sample(ev, call, t, rule, enqueue_ms, self.long_call or "")
            else:
                ev.samples_ms = sample_host(call, rule)
        finally:
            if collecting:
                gc.enable()
        ev.sampling_ms = (time.perf_counter() - t0) * 1e3
        return ev
