"""The worker: reads commands on fd 3, runs each, answers on fd 4
(PROTOCOL.md). stdout and stderr belong to the experiment's code."""

import faulthandler
import gc
import os
import platform
import sys
import time

from . import autotune, tunecheck
from .backend import Backend, cuda_device, free_after_oom, host_device
from .correctness import check
from .errors import StageError, error_event
from .gpu import warm
from .gpu.sampler import Sampler
from .loader import Code, case_params
from .protocol import (Autotuned, Check, Exit, First, FirstCall, Init, ModelsCmd, Profile, Profiled, Ready, Samples, Time,
                       Warm, encode_event, finite, parse_command, read_line)
from .timing import Batches, StopRule, warmup

# The least samples of one batch of a check of an autotuner's choice.
CHECK_MIN_SAMPLES = 10


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
        warmed = None
        if c.warm_ms > 0 and self.gpu is not None:
            try:
                took, first_ms, last_ms = warm.warm(self.be.torch, c.warm_ms)
                warmed = Warm(ms=finite(took), first_call_ms=finite(first_ms), last_call_ms=finite(last_ms))
            except Exception:  # noqa: BLE001 - a warm-up the device cannot run (no fp16 products) is skipped, never the call
                warmed = None
        self.be.sync()
        t0 = time.perf_counter()
        with autotune.recording() as rec:
            self.code.call_fn(args, kwargs)
            self.be.sync()
        ms = (time.perf_counter() - t0) * 1e3
        for i, handle in rec.handles.items():
            self.check_choice(c, params, rec.choices[i], handle, args, kwargs)
        del args, kwargs
        tuned = [Autotuned(kernel=a["kernel"], kind=a["kind"], config=a["config"], params=a["params"],
                           source=a["source"], key=a.get("key") or None,
                           tuning_ms=finite(a["tuning_ms"]) if "tuning_ms" in a else None,
                           timings_ms={k: finite(v) for k, v in a["timings_ms"].items()} if "timings_ms" in a else None,
                           check=a.get("check"))
                 for a in rec.choices]
        return FirstCall(ms=finite(ms), autotune=tuned or None, warm=warmed)

    def check_choice(self, c, params, choice, handle, args, kwargs):
        """Checks an autotuner's choice (tunecheck): a choice a check of an
        earlier run stored replaces the one read from Triton's cache; then,
        on a GPU and where c asks for it, the best configs are timed again
        on the worker's clock, and the call runs the config the check
        keeps. choice (an autotune.Recorder record) is updated to say so."""
        tuner, key, configs = handle
        source = choice["source"]
        if source not in (autotune.TUNED, autotune.CACHE) or choice["config"] not in configs:
            return
        path = None
        if getattr(tuner, "cache_results", False):
            path = tunecheck.store_path(tunecheck.cache_dir(), tuner, key, list(configs), self.device_name())

        def use(label):
            tuner.cache[key] = configs[label]
            choice["config"], choice["params"] = label, autotune.config_params(configs[label])

        stored = tunecheck.load(path) if source == autotune.CACHE else None
        if stored is not None and stored != choice["config"] and stored in configs:
            use(stored)
        if c.check_configs < 2 or self.gpu is None:
            return
        labels = tunecheck.candidates(choice["config"], choice.get("timings_ms") or {}, c.check_configs)
        labels = [x for x in labels if x in configs]
        if len(labels) < 2:
            return
        call = lambda: self.code.call_fn(args, kwargs)  # noqa: E731 - the call the timing makes
        t = Time(params=params, seed=c.seed, min_samples=CHECK_MIN_SAMPLES, budget_ms=c.check_budget_ms, warmup_ms=0.0,
                 flush=c.flush, rest_ratio=c.rest_ratio, kernel_clock_max_ms=c.kernel_clock_max_ms)
        launch_ms = getattr(self.gpu.kclock, "launch_ms", 0.0) or 0.0

        def time_batch():
            n, el, enqueue_ms = warmup(call, self.be.sync, 0.0, True)
            ev = Samples(samples_ms=[], warmup_calls=n, warmup_ms=el, timer=self.be.timer, sampling_ms=0.0)
            self.gpu.sample(ev, call, t, StopRule.of(t), enqueue_ms, self.gpu.long_call(call, t, enqueue_ms) or "")
            if ev.kernel_ms and len(ev.kernel_ms) == len(ev.samples_ms):
                return [k + launch_ms for k in ev.kernel_ms], "kernel"
            return ev.samples_ms, "events"

        before = choice["config"]
        medians, clock, rounds = tunecheck.run_check(labels, use, time_batch, c.check_rounds, c.check_wall_ms)
        run, replaced, beaten, note = tunecheck.decide(before, medians, source)
        use(run)
        rec = {"clock": clock, "timings_ms": {k: round(finite(v), 6) for k, v in medians.items()},
               "rounds": rounds, "note": note}
        if stored is not None and stored == before and source == autotune.CACHE:
            rec["note"] += "; the choice a check of an earlier run stored"
        if replaced:
            rec["replaced"] = replaced
        if beaten:
            rec["beaten"] = beaten
        if source == autotune.TUNED and tunecheck.save(path, {"chosen": run, "autotuner": before, "kernel": choice["kernel"],
                                                               "key": choice.get("key", ""), "clock": clock,
                                                               "timings_ms": rec["timings_ms"]}):
            rec["stored"] = True
        choice["check"] = rec

    def device_name(self):
        try:
            return self.be.torch.cuda.get_device_name()
        except Exception:  # noqa: BLE001 - the name only narrows the stored choice's key
            return ""

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
