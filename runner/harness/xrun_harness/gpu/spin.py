"""The spin kernel (torch.cuda._sleep): what holds the GPU back where the
hold kernel cannot be loaded, and how long it spins (PROTOCOL.md, "time")."""

import math

# Early starts of at least 1 in EARLY_SHARE samples, over at least
# EARLY_MIN_TAKEN since the spin last changed, mean the spin is too short.
EARLY_SHARE = 20
EARLY_MIN_TAKEN = 100
MAX_SPIN_MS = 10.0


def calibrate(torch):
    """How many cycles torch.cuda._sleep spins per millisecond (0 without it)."""
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        return 0.0
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    cycles = 1000000
    best = math.inf
    for _ in range(3):
        torch.cuda.synchronize()
        a.record()
        sleep(cycles)
        b.record()
        torch.cuda.synchronize()
        best = min(best, a.elapsed_time(b))
    return cycles / best if best > 0 else 0.0


class Spin:
    """The spin's length in cycles, kept from batch to batch: it starts at
    1.5 x the warm-up's median enqueue time + 20 us (50 us to 1 ms) and
    doubles, up to MAX_SPIN_MS, when samples start early too often."""

    def __init__(self, cycles_per_ms=0.0):
        self.per_ms = cycles_per_ms
        self.longest = 0  # the longest spin a batch has called for so far
        self.taken = 0  # samples and early starts since the spin last changed
        self.early = 0

    def limits(self, enqueue_ms, uncovered):
        """(cycles, max cycles) for a batch; (0, 0) without a calibrated spin,
        and no spin at all once the GPU is left uncovered."""
        if self.per_ms <= 0:
            return 0, 0
        spin_ms = min(max(1.5 * enqueue_ms + 0.02, 0.05), 1.0)
        cycles = 0 if uncovered else max(int(spin_ms * self.per_ms), self.longest)
        return cycles, int(MAX_SPIN_MS * self.per_ms)

    def kept(self):
        """A sample taken behind the spin started in time."""
        self.taken += 1

    def early_start(self, cycles, max_cycles):
        """A sample behind a spin of cycles started early. Returns the new,
        doubled spin when early starts are systematic (the batch's samples so
        far must then go too), else None."""
        self.taken += 1
        self.early += 1
        if self.early * EARLY_SHARE >= self.taken >= EARLY_MIN_TAKEN:
            self.longest = min(2 * cycles, max_cycles)
            self.taken = self.early = 0
            return self.longest
        return None

    def ms(self, cycles):
        return cycles / self.per_ms
