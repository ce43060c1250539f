"""The kernel clock: the GPU's own record of the kernels a call ran (CUPTI's
kernel, memory copy and memory set records), beside the CUDA events
(PROTOCOL.md, "time")."""

from dataclasses import dataclass
from typing import List, Optional

from .hold import HOLD_NAME, MARK_NAME, TOUCH_NAME

# Touch kernels queued back to back per launch-cost measure: 32 gaps.
TOUCH_LAUNCHES = 33


class KernelClock:
    """CUPTI's records of the kernels, memory copies and memory sets the
    GPU ran, a second clock beside the event pair for the same samples.

    Two CUDA events around a call also count the GPU's processing of the
    events and the launch between them and the kernel (about 2.3 us on an
    H100, 15% or more of a kernel of a few microseconds); CUPTI's records
    time each kernel from its start to its end with a 32 ns resolution. A
    call's window is the records launched between the hold kernel and the
    mark kernel that follows its end event (by CUPTI's correlation ids,
    which number the launches in the order they were made, on any stream).

    start() and stop() bracket a batch of samples; stop() returns the GPU
    records as (correlation id, name, start ns, end ns), sorted by
    correlation id; abandon() stops a batch that failed, ignoring its
    records. launch_ms is the GPU's cost of one launch, which the records
    leave out (calibrate). Two readers give the records: ActivityClock
    (activityclock.py, CUPTI's activity API through ctypes) and, where it
    cannot be opened, ProfilerClock (torch's profiler); reader names it.
    """

    reader = ""

    def __init__(self, torch, hold, word):
        self.torch = torch
        self.hold = hold
        self.word = word  # the touch kernel's target: a device tensor
        self.on = False
        self.launch_ms = 0.0

    def touch_gaps(self):
        """Queues TOUCH_LAUNCHES touch kernels behind the hold, so that they
        run back to back, and waits for them; the records then hold their
        gaps (launch_gaps)."""
        torch = self.torch
        stream = torch.cuda.current_stream().cuda_stream
        self.hold.arm(stream, 0.0, 20.0)
        for _ in range(TOUCH_LAUNCHES):
            self.hold.touch(stream, self.word.data_ptr())
        self.hold.release()
        torch.cuda.synchronize()

    def calibrate(self):
        """A first measure of the launch cost (3 x TOUCH_LAUNCHES): the
        interquartile mean of the gaps (they cluster around several values,
        0.86 to 1.3 us on an H100, and a median jumps between clusters).
        Every batch measures it again."""
        gaps = []
        for _ in range(3):
            self.torch.cuda.synchronize()
            self.start()
            self.touch_gaps()
            gaps += launch_gaps(self.stop())
        if len(gaps) < 2 * TOUCH_LAUNCHES:
            raise RuntimeError("CUPTI recorded %d of %d launch gaps" % (len(gaps), 3 * (TOUCH_LAUNCHES - 1)))
        self.launch_ms = iq_mean(gaps)


class ProfilerClock(KernelClock):
    """The records through torch's profiler (kineto). Each batch sets the
    profiler up and stops it, and the stop turns every record, the CUDA
    API calls' included, into events: 0.1-0.15 s a batch of small calls
    on an H100 or H200, where ActivityClock takes 0.01-0.02 s."""

    reader = "profiler"

    def __init__(self, torch, hold, word):
        super().__init__(torch, hold, word)
        from torch.autograd import profiler as ap
        from torch._C._autograd import DeviceType
        self.ap = ap
        try:
            prof = ap.profile(use_device="cuda")
        except TypeError:  # torch before use_device
            prof = ap.profile(use_cuda=True)
        self.config = prof.config()
        self.activities = {torch.autograd.ProfilerActivity.CUDA}
        self.cuda = DeviceType.CUDA

    def start(self):
        # Each batch prepares again: enabling a profiler that was disabled
        # without it crashes (torch 2.11).
        self.ap._prepare_profiler(self.config, self.activities)
        self.ap._enable_profiler(self.config, self.activities)
        self.on = True

    def stop(self):
        self.on = False
        res = self.ap._disable_profiler()
        cuda = self.cuda
        out = [(e.correlation_id(), e.name(), e.start_ns(), e.end_ns()) for e in res.events() if e.device_type() == cuda]
        out.sort()
        return out

    def abandon(self):
        if self.on:
            self.on = False
            try:
                self.ap._disable_profiler()
            except Exception:  # noqa: B902 - nothing to save
                pass


def call_windows(records):
    """Splits GPU records (sorted by correlation id) into calls: the records
    launched after each hold kernel and before the mark kernel that follows
    it. Per call, (span ms, busy ms, records) where span runs from the first
    record's start to the last one's end and busy sums their durations, or
    None for a call that ran nothing on the GPU. Records outside a window
    (the L2 flush, launches made while no sample was being taken) are left
    out; so is a hold without a mark (a sample cut short)."""
    out = []
    cur = None
    for _, name, start, end in records:
        if name == HOLD_NAME:
            cur = []
        elif name == MARK_NAME:
            if cur is None:
                continue
            if cur:
                out.append(((max(e for _, e in cur) - min(s for s, _ in cur)) / 1e6,
                            sum(e - s for s, e in cur) / 1e6, len(cur)))
            else:
                out.append(None)
            cur = None
        elif cur is not None:
            cur.append((start, end))
    return out


def iq_mean(xs):
    """The mean of the middle half of xs (the interquartile mean)."""
    xs = sorted(xs)
    q = len(xs) // 4
    mid = xs[q:len(xs) - q] or xs
    return sum(mid) / len(mid)


def launch_gaps(records):
    """Gaps (ms) between consecutive touch kernels in GPU records: the
    front end's cost of one launch, which CUPTI's kernel records (unlike
    Nsight Compute's gpu__time_duration) leave out of every kernel."""
    touches = sorted((s, e) for _, name, s, e in records if name == TOUCH_NAME)
    return [(touches[i + 1][0] - touches[i][1]) / 1e6 for i in range(len(touches) - 1)]


@dataclass
class Reading:
    """The kernel clock's reading of a batch (the samples event's kernel_*
    fields): per kept sample the span of its call's records and their summed
    durations, and the median number of records per call; or a note saying
    why the batch has none."""
    kernel_ms: Optional[List[float]] = None
    busy_ms: Optional[List[float]] = None
    kernels: Optional[int] = None
    launch_gaps_ms: Optional[List[float]] = None
    note: Optional[str] = None

    def apply(self, ev):
        """Sets a protocol.Samples event's kernel clock fields."""
        ev.kernel_ms, ev.busy_ms, ev.kernels = self.kernel_ms, self.busy_ms, self.kernels
        ev.launch_gaps_ms, ev.kernel_note = self.launch_gaps_ms, self.note


def read_batch(records, kept, n):
    """The Reading of a batch's records: kept says, per sample taken behind
    the hold and the mark kernel, whether it was kept; n samples were."""
    wins = call_windows(records)
    if len(wins) != len(kept):
        return Reading(note="CUPTI recorded %d of the batch's %d calls" % (len(wins), len(kept)))
    wins = [w for w, k in zip(wins, kept) if k]
    if len(wins) != n:
        return Reading(note="%d kernel readings for %d samples" % (len(wins), n))
    if any(w is None for w in wins):
        return Reading(note="a call ran no kernel, copy or memory set on the GPU")
    counts = sorted(w[2] for w in wins)
    return Reading(kernel_ms=[w[0] for w in wins], busy_ms=[w[1] for w in wins],
                   kernels=counts[len(counts) // 2] if counts else 0, launch_gaps_ms=launch_gaps(records))
