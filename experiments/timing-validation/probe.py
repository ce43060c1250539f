"""Why do the runner, do_bench and Nsight Compute disagree? Times the
validation cases under variants of the runner's method, interleaved in rounds,
while nvidia-smi samples the SM clock and power:

    python3 probe.py OUTDIR

Variants per sample (all: device sync, flush, device sync, spin kernel, start
event, call, end event, device sync; as runner/harness/harness.py):

  write       flush = zero a 256 MiB buffer (the L2 is left full of dirty lines)
  read        flush = sum a 256 MiB buffer (the L2 is left full of clean lines)
  none        no flush
  write_gap   write, then 25 ms idle before the sample
  read_gap    read, then 25 ms idle before the sample
  dobench     triton.testing.do_bench(return_mode="median")

Also times an empty event pair and a 1-element kernel after the spin kernel
(the fixed cost inside the events). Writes OUTDIR/probe.json and prints a
table with each variant's median (median over rounds), spread between rounds,
and the mean SM clock and power while it ran.
"""

import datetime
import json
import os
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels"))

from timing import cases, kernel  # noqa: E402

CASES = ["mm_small", "add_32m", "mm_large"]
VARIANTS = ["write", "read", "none", "write_gap", "read_gap", "dobench"]
ROUNDS = 3
MIB = 1 << 20


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    smi_path = os.path.join(outdir, "smi.csv")
    smi = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active",
         "--format=csv,noheader,nounits", "-lms", "50"],
        stdout=open(smi_path, "w"), stderr=subprocess.DEVNULL)
    try:
        out = run()
    finally:
        smi.terminate()
        smi.wait()
    readings = read_smi(smi_path)
    for ph in out["phases"]:
        rs = [r for r in readings if ph["t0"] <= r[0] <= ph["t1"]]
        ph["smi_n"] = len(rs)
        if rs:
            ph["sm_mhz"] = statistics.mean(r[1] for r in rs)
            ph["sm_mhz_min"] = min(r[1] for r in rs)
            ph["power_w"] = statistics.mean(r[2] for r in rs)
            ph["reasons"] = sorted({r[4] for r in rs})
    with open(os.path.join(outdir, "probe.json"), "w") as f:
        json.dump(out, f, indent=1)
    report(out)


def read_smi(path):
    rows = []
    for line in open(path):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 5:
            continue
        try:
            ts = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            rows.append((ts, float(parts[1]), float(parts[2]), float(parts[3]), parts[4]))
        except ValueError:
            continue
    return rows


def run():
    flush = torch.empty(256 * MIB // 4, dtype=torch.int32, device="cuda")
    flush.fill_(1)
    sleep_per_ms = calibrate()
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "overhead": overhead(sleep_per_ms),
           "phases": []}
    for name in CASES:
        a, b = cases.inputs({"case": name, "device": "cuda"}, seed=1)
        call = lambda: kernel.kernel(a, b)  # noqa: E731
        for _ in range(5):
            call()
        torch.cuda.synchronize()
        enq = enqueue_ms(call)
        cycles = int(min(max(1.5 * enq + 0.02, 0.05), 1.0) * sleep_per_ms)
        for rnd in range(ROUNDS):
            for v in VARIANTS:
                t0 = time.time()
                if v == "dobench":
                    import triton.testing
                    samples = [triton.testing.do_bench(call, warmup=25, rep=400, return_mode="median")]
                else:
                    samples = sample(call, flush, v, cycles, budget_ms=400)
                t1 = time.time()
                out["phases"].append({"case": name, "variant": v, "round": rnd, "t0": t0, "t1": t1,
                                      "median_ms": statistics.median(samples), "n": len(samples)})
                print(f"{name} {v} round {rnd}: {statistics.median(samples):.5f} ms ({len(samples)} samples)", flush=True)
        del a, b
        torch.cuda.empty_cache()
    return out


def calibrate():
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = 1e9
    for _ in range(3):
        torch.cuda.synchronize()
        a.record()
        torch.cuda._sleep(1000000)
        b.record()
        torch.cuda.synchronize()
        best = min(best, a.elapsed_time(b))
    return 1000000 / best


def enqueue_ms(call):
    ts = []
    for _ in range(20):
        s = time.perf_counter()
        call()
        ts.append((time.perf_counter() - s) * 1e3)
        torch.cuda.synchronize()
    return statistics.median(ts)


def overhead(sleep_per_ms):
    """Event pair around nothing, and around a 1-element add, after a spin."""
    x = torch.ones(1, device="cuda")
    res = {}
    for label, fn in (("empty", lambda: None), ("tiny_kernel", lambda: x.add_(1))):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ms = []
        for _ in range(2000):
            torch.cuda.synchronize()
            torch.cuda._sleep(int(0.05 * sleep_per_ms))
            s.record()
            fn()
            e.record()
            torch.cuda.synchronize()
            ms.append(s.elapsed_time(e))
        res[label] = statistics.median(ms)
    return res


def sample(call, flush, variant, cycles, budget_ms):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    mode = variant.replace("_gap", "")
    gap = variant.endswith("_gap")
    samples = []
    while sum(samples) < budget_ms or len(samples) < 10:
        torch.cuda.synchronize()
        if mode == "write":
            flush.zero_()
        elif mode == "read":
            flush.sum()
        torch.cuda.synchronize()
        if gap:
            time.sleep(0.025)
        torch.cuda._sleep(cycles)
        start.record()
        call()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end))
        if len(samples) >= 5000:
            break
    return samples


def report(out):
    print(f"\n{out['gpu']}; event pair overhead: empty {out['overhead']['empty']*1e3:.2f} us, "
          f"1-element kernel {out['overhead']['tiny_kernel']*1e3:.2f} us")
    print("| case | variant | median (ms) | rounds spread | vs write | SM MHz (mean/min) | power W |")
    print("|---|---|---|---|---|---|---|")
    for name in CASES:
        base = None
        for v in VARIANTS:
            ph = [p for p in out["phases"] if p["case"] == name and p["variant"] == v]
            meds = [p["median_ms"] for p in ph]
            m = statistics.median(meds)
            base = base or m
            spread = (max(meds) - min(meds)) / m
            mhz = [p.get("sm_mhz") for p in ph if p.get("sm_mhz")]
            mins = [p.get("sm_mhz_min") for p in ph if p.get("sm_mhz_min")]
            pw = [p.get("power_w") for p in ph if p.get("power_w")]
            clock = f"{statistics.mean(mhz):.0f}/{min(mins):.0f}" if mhz else "-"
            power = f"{statistics.mean(pw):.0f}" if pw else "-"
            print(f"| {name} | {v} | {m:.5f} | {100*spread:.2f}% | {100*(m-base)/base:+.2f}% | {clock} | {power} |")


if __name__ == "__main__":
    main(sys.argv[1])
