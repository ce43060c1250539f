"""The worker: reads commands on fd 3, runs each, answers on fd 4
(PROTOCOL.md). stdout and stderr belong to the experiment's code."""

import faulthandler
import gc
import os
import platform
import sys
import time

from . import autotune
from .backend import Backend, cuda_device, free_after_oom, host_device
from .correctness import check
from .errors import StageError, error_event
from .gpu.sampler import Sampler
from .loader import Code, case_params
from .protocol import (Autotuned, Check, Exit, First, FirstCall, Init, ModelsCmd, Profile, Profiled, Ready, Time,
                       encode_event, finite, parse_command, read_line)
from .timing import Batches


class Steps:
    """The time each step of init took, in ms, by name."""

    def __init__(self):
        self.ms = {}
        self.t = time.perf_counter()

    def done(self, name):
        now = time.perf_counter()
        self.ms[name] = round((now - self.t) * 1e3, 1)
        self.t = now


class Worker:
    """One implementation's worker. init imports the experiment's code and
    sets up the device; every other command needs a successful init."""

    def __init__(self):
        self.be = None  # Backend
        self.code = None  # loader.Code
        self.gpu = None  # gpu.sampler.Sampler on a GPU
        self.batches = None  # timing.Batches

    def handle(self, cmd):
        """The event answering cmd (a protocol command other than exit)."""
        if isinstance(cmd, Init):
            return self.init(cmd)
        if self.code is None:
            raise StageError("harness", RuntimeError("%s before a successful init" % cmd.op))
        self.be.refresh()
        params = case_params(cmd.params, self.be.device)
        if isinstance(cmd, ModelsCmd):
            return self.code.run_models(params)
        if isinstance(cmd, First):
            return self.first(cmd, params)
        if isinstance(cmd, Check):
            return check(self.be, self.code, cmd, params, keep=lambda seed, inputs: self.batches.adopt(params, seed, inputs))
        if isinstance(cmd, Time):
            return self.batches.batch(cmd, params)
        if isinstance(cmd, Profile):
            return self.profile(cmd, params)
        raise StageError("harness", ValueError("no handler for op %r" % cmd.op))

    def init(self, c):
        steps = Steps()
        be = Backend.load(c.device)
        steps.done("imports")
        code = Code.load(c)
        steps.done("code")
        be.refresh()
        numpy_v, torch_v, triton_v, cuda_v = be.versions()
        ready = Ready(pid=os.getpid(), python=platform.python_version(), numpy=numpy_v, torch=torch_v,
                      triton=triton_v, cuda=cuda_v, timer=be.timer, device=host_device())
        gpu = None
        if be.cuda:
            ready.device = cuda_device(be.torch)
            gpu = Sampler(be.torch)
            steps.done("cuda")
            # A worker that Nsight Compute profiles only runs calls: no flush
            # buffer, no hold, and no CUPTI of its own (ncu is using it).
            if c.flush and not c.profile:
                ready.flush_bytes = gpu.open_flush(c.flush_bytes, ready.device.l2_bytes)
                steps.done("flush")
            if not c.profile:
                gpu.prepare(ready, c.kernel_clock, steps)
        ready.init_ms = steps.ms
        self.be, self.code, self.gpu = be, code, gpu
        self.batches = Batches(be, code, gpu, c.cuda_graph and be.cuda)
        return ready

    def first(self, c, params):
        """The implementation's first call at a case on the timing seed's
        inputs, untimed, with the autotuners' choices recorded. The runner
        sends it to one worker at a time, so that an autotuner times its
        configs on a GPU nobody else uses (PROTOCOL.md, "first"). The
        inputs are dropped afterwards: the check makes its own."""
        args, kwargs = self.code.make_inputs(params, c.seed)
        self.be.sync()
        t0 = time.perf_counter()
        with autotune.recording() as rec:
            self.code.call_fn(args, kwargs)
            self.be.sync()
        ms = (time.perf_counter() - t0) * 1e3
        del args, kwargs
        tuned = [Autotuned(kernel=a["kernel"], kind=a["kind"], config=a["config"], params=a["params"],
                           source=a["source"], key=a.get("key") or None,
                           tuning_ms=finite(a["tuning_ms"]) if "tuning_ms" in a else None,
                           timings_ms={k: finite(v) for k, v in a["timings_ms"].items()} if "timings_ms" in a else None)
                 for a in rec.choices]
        return FirstCall(ms=finite(ms), autotune=tuned or None)

    def profile(self, c, params):
        """One call for Nsight Compute: the worker runs under ncu with
        profiling off from the start. An untimed call first (compilation,
        autotuning, lazy initialisation stay out of the report), then one
        call between cudaProfilerStart and cudaProfilerStop, inside an NVTX
        range named "xrun <case label>"."""
        if not self.be.cuda:
            raise StageError("harness", RuntimeError("profiling needs a CUDA device"))
        torch = self.be.torch
        args, kwargs = self.code.make_inputs(params, c.seed)
        self.code.call_fn(args, kwargs)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("xrun " + c.label)
        torch.cuda.profiler.start()
        try:
            self.code.call_fn(args, kwargs)
            torch.cuda.synchronize()
        finally:
            torch.cuda.profiler.stop()
            torch.cuda.nvtx.range_pop()
        del args, kwargs
        return Profiled()

    def torch(self):
        """torch as far as the worker knows it, for cleaning up after an error."""
        return self.be.torch if self.be is not None else sys.modules.get("torch")


def serve(commands, events):
    """Answers commands (lines) on events (a text file) until exit or EOF.
    Every failure is answered with an error event; the worker goes on."""
    w = Worker()
    for line in commands:
        line = line.strip()
        if not line:
            continue
        cid = None
        try:
            obj = read_line(line)
            cid = obj.get("id")
            cmd = parse_command(obj)
            if isinstance(cmd, Exit):
                break
            ev = w.handle(cmd)
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: B902 - report everything, keep serving
            ev = error_event(e)
            if ev.kind == "oom":
                free_after_oom(w.torch())
        events.write(encode_event(ev, cid))
        events.flush()
        gc.collect()


def main():
    cmd_fd = int(os.environ.get("XRUN_CMD_FD", "3"))
    ev_fd = int(os.environ.get("XRUN_EVENT_FD", "4"))
    # Programs the experiment starts (compilers, profilers) must not inherit
    # the protocol descriptors, or a stray write would corrupt the stream.
    os.set_inheritable(cmd_fd, False)
    os.set_inheritable(ev_fd, False)
    commands = os.fdopen(cmd_fd, "r", encoding="utf-8")
    events = os.fdopen(ev_fd, "w", encoding="utf-8")
    faulthandler.enable(file=sys.stderr, all_threads=True)
    serve(commands, events)
