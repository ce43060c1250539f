"""GPU samples: CUDA events around each call behind the L2 flush and the
hold (or spin) kernel, with the kernel clock beside them (PROTOCOL.md,
"time")."""

import time

from .activityclock import ActivityClock
from .flush import L2Flush, flush_size
from .hold import Hold, hold_max_ms
from .kernelclock import ProfilerClock, Reading, read_batch
from .spin import Spin, calibrate

# Hold time-outs after which the worker stops holding the GPU back.
MAX_HOLD_TIMEOUTS = 3
# The longest rest (ms) before a sample, whatever rest_ratio asks.
MAX_REST_MS = 1000.0


def open_kernel_clock(torch, hold, readers=None):
    """(KernelClock, "") with its launch cost measured, or (None, why not):
    the first of readers (ActivityClock, then ProfilerClock) that opens and
    records the touch kernels' launch gaps. Where none can, the worker
    times on the events alone."""
    word = torch.zeros(2, dtype=torch.int32, device="cuda")
    why = []
    for reader in readers or (ActivityClock, ProfilerClock):
        kc = None
        try:
            kc = reader(torch, hold, word)
            kc.calibrate()
            return kc, ""
        except Exception as e:  # noqa: B902 - any failure: the next reader
            if kc is not None:
                kc.abandon()
            why.append("%s: %s: %s" % (reader.__name__, type(e).__name__, e))
    return None, "CUPTI is unavailable (%s)" % "; ".join(why)


class Sampler:
    """A GPU worker's timing state: the flush buffer, what holds the GPU
    back before each sample (the hold kernel; the spin kernel where it
    cannot be loaded; nothing once the hold has timed out too often) and
    the kernel clock, each None with a note saying why where absent."""

    def __init__(self, torch):
        self.torch = torch
        self.flush = None  # L2Flush
        self.spin = Spin()
        self.hold = None  # Hold, or None and hold_note says why
        self.hold_note = ""
        self.hold_timeouts = 0
        self.uncovered = False  # the call waits for the GPU: nothing can run ahead of it
        self.kclock = None  # KernelClock, or None and kclock_note says why
        self.kclock_note = ""

    def open_flush(self, asked, l2_bytes):
        """Allocates the flush buffer (asked bytes, 0: the default size);
        returns its size."""
        self.flush = L2Flush(self.torch, flush_size(asked, l2_bytes))
        return self.flush.nbytes

    def prepare(self, ready, kernel_clock, steps=None):
        """Calibrates the spin, loads the hold, measures the timer floor and
        opens the kernel clock when asked for; says so in ready (a
        protocol.Ready). steps (a worker.Steps) times each of them."""
        done = steps.done if steps is not None else (lambda name: None)
        self.spin = Spin(calibrate(self.torch))
        done("spin")
        try:
            self.hold = Hold()
        except Exception as e:  # noqa: B902 - any failure: time with the spin kernel instead
            self.hold_note = "hold kernel unavailable (%s)" % e
        done("hold")
        ready.timer_floor_ms = self.timer_floor()
        done("timer_floor")
        if not kernel_clock:
            self.kclock_note = "not asked for (method.kernel_clock: false)"
        elif self.hold is None:
            self.kclock_note = "needs the hold kernel: " + self.hold_note
        else:
            self.kclock, self.kclock_note = open_kernel_clock(self.torch, self.hold)
        if self.kclock is not None:
            ready.kernel_clock = "cupti"
            ready.kernel_clock_reader = self.kclock.reader
            ready.launch_ms = self.kclock.launch_ms
        else:
            ready.kernel_clock_note = self.kclock_note
        done("kernel_clock")

    def capture(self, call):
        """Captures one call in a CUDA graph and returns the graph."""
        torch = self.torch
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                call()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            call()
        return g

    def long_call(self, call, t, enqueue_ms):
        """Why a call of these inputs is timed without the kernel clock: its
        median of three calls on the GPU reaches t.kernel_clock_max_ms ("":
        it does not; None: nothing to decide, no kernel clock or no limit)."""
        limit = t.kernel_clock_max_ms
        if self.kclock is None or self.hold is None or limit <= 0:
            return None
        gpu_ms = self.held_median(call, 3, t.flush, hold_max_ms(enqueue_ms))
        if gpu_ms < limit:
            return ""
        return ("the call takes %.3g ms on the GPU, at least kernel_clock_max_ms (%g): timed on "
                "the events alone, which CUPTI's recording would slow" % (gpu_ms, limit))

    def timer_floor(self, n=21):
        """The median of n empty timed regions (the two events around
        nothing, behind the hold kernel where there is one): the least a GPU
        sample reads."""
        return max(0.0, self.held_median(None, n, False, 20.0))

    def held_median(self, call, n, flush, max_ms):
        """The median of n event-timed regions around call (None: around
        nothing), each behind the flush when asked and the hold kernel
        where there is one, without CUPTI recording."""
        torch = self.torch
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        stream = torch.cuda.current_stream().cuda_stream
        xs = []
        for _ in range(n):
            torch.cuda.synchronize()
            if flush and self.flush is not None:
                self.flush()
            if self.hold is not None:
                self.hold.arm(stream, 0.0, max_ms)
            start.record()
            if call is not None:
                call()
            end.record()
            if self.hold is not None:
                self.hold.release()
            torch.cuda.synchronize()
            xs.append(start.elapsed_time(end))
        xs.sort()
        return xs[n // 2]

    def hold_timed_out(self, max_hold_ms):
        """Counts a sample whose hold timed out; after MAX_HOLD_TIMEOUTS the
        GPU is no longer held back for this implementation."""
        self.hold_timeouts += 1
        if self.hold_timeouts >= MAX_HOLD_TIMEOUTS:
            self.hold, self.uncovered = None, True
            self.hold_note = ("the hold kernel timed out (%.0f ms) 3 times: the call waits for the GPU "
                              "(or fills the launch queue), so its samples include the host's time "
                              "to enqueue it" % max_hold_ms)

    def sample(self, ev, call, t, rule, enqueue_ms, long_call=""):
        """CUDA-event samples of call into ev (a protocol.Samples) until rule
        (a timing.StopRule) says stop.

        Per sample: device sync, L2 flush, a kernel that keeps the stream
        waiting, start event, the call, end event, release, device sync. The
        sync makes work on side streams count; stream order keeps the flush
        out of the timed region. The waiting kernel keeps the GPU from
        reaching the start event before the host has enqueued the call (or
        the GPU would idle inside the timed region while Python dispatches
        it), and lets the GPU rest: it lasts at least t.rest_ratio x the
        previous sample, so a power-limited kernel is not timed at the clock
        its own previous call pushed down.

        The waiting kernel is the hold kernel, released by the host once the
        end event is enqueued. If the start event has completed before the
        release, the hold timed out (the call waited for the GPU itself, or
        filled the launch queue): the sample is discarded (hold_timed_out).
        Where the hold cannot be loaded, a device sync after the flush and
        the spin kernel (Spin); a sample whose start event had completed by
        the time the call returned is discarded, and systematic early starts
        lengthen the spin and discard the batch's samples so far.

        With the kernel clock (the hold only), the mark kernel follows the
        end event and CUPTI records the batch; a long_call note
        (Sampler.long_call) leaves CUPTI off for the batch and is its
        kernel_note.
        """
        torch = self.torch
        flush = t.flush and self.flush is not None
        rest = max(0.0, t.rest_ratio)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        stream = torch.cuda.current_stream().cuda_stream
        max_hold_ms = hold_max_ms(enqueue_ms)
        sleep = getattr(torch.cuda, "_sleep", None)
        spin = self.spin
        per_ms = spin.per_ms
        cycles, max_cycles = spin.limits(enqueue_ms, self.uncovered) if sleep is not None else (0, 0)
        samples = []
        discarded = 0
        total = prev = 0.0
        kc = self.kclock if self.hold is not None and not long_call else None
        kept = []  # per sample taken behind the hold and mark: whether it was kept
        reading = None
        if kc is not None:
            kc.start()
        t0 = time.perf_counter()
        try:
            while True:
                torch.cuda.synchronize()
                hold = self.hold
                if flush:
                    self.flush()
                    if hold is None:
                        torch.cuda.synchronize()
                rest_ms = min(rest * prev, MAX_REST_MS)
                if hold is not None:
                    hold.arm(stream, rest_ms, max_hold_ms)
                    start.record()
                    call()
                    end.record()
                    if kc is not None:
                        hold.mark(stream)
                    early = start.query()
                    hold.release()
                else:
                    wait = max(cycles, int(rest_ms * per_ms))
                    if wait:
                        sleep(wait)
                    start.record()
                    call()
                    early = 0 < cycles < max_cycles and start.query()
                    end.record()
                torch.cuda.synchronize()
                ms = start.elapsed_time(end)
                if hold is not None and kc is not None:
                    kept.append(not early)
                if early:
                    discarded += 1
                    if hold is not None:
                        self.hold_timed_out(max_hold_ms)
                        if self.hold is None:
                            cycles = 0
                    else:
                        grown = spin.early_start(cycles, max_cycles)
                        if grown is not None:
                            discarded += len(samples)
                            samples, total, cycles = [], 0.0, grown
                    if rule.out_of_time(len(samples), (time.perf_counter() - t0) * 1e3):
                        break
                    continue
                if hold is None and cycles:
                    spin.kept()
                prev = ms
                samples.append(ms)
                total += ms
                if rule.done(len(samples), total, (time.perf_counter() - t0) * 1e3):
                    break
            if kc is not None:
                if self.hold is not None:
                    # The launch cost, measured again with the GPU in the
                    # state its samples left it.
                    kc.touch_gaps()
                records = kc.stop()
                if self.hold is None:
                    reading = Reading(note="the hold kernel timed out during the batch: " + self.hold_note)
                else:
                    reading = read_batch(records, kept, len(samples))
        finally:
            if kc is not None:
                kc.abandon()
        if reading is None:
            reading = Reading(note=long_call or self.kclock_note or
                              ("the GPU was not held back by the hold kernel: " + self.hold_note))
        ev.samples_ms, ev.discarded = samples, discarded
        if self.hold is not None:
            ev.cover = "hold"
        elif cycles and not self.uncovered:
            ev.cover, ev.spin_ms = "spin", spin.ms(cycles)
        else:
            ev.cover = "none"
        if self.hold_note:
            ev.cover_note = self.hold_note
        reading.apply(ev)
