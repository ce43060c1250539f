"""Lines up the runner's medians with do_bench and Nsight Compute.

    python3 compare.py OUTDIR

OUTDIR (as validate.sh leaves it) holds run1/ and run2/ (two runner runs back
to back), graph/ (a runner run with method.cuda_graph), norest/ (one with
method.rest_ratio 0: samples back to back), dobench.json (three
do_bench rounds per case), and ncu-all-<case>.csv / ncu-none-<case>.csv
(Nsight Compute with --cache-control all and none). Prints a markdown table:
per case the runner's median of each run, do_bench's median of its rounds and
their spread, ncu's median kernel duration in both cache modes, the relative
differences, and the SM clock while the runner timed.
"""

import csv
import io
import json
import os
import statistics
import sys

CASES = ["mm_small", "add_32m", "mm_large"]


def runner_timings(path):
    with open(path) as f:
        r = json.load(f)
    out = {}
    for c in r["cases"]:
        t = c["results"].get("kernel", {}).get("timing")
        if t:
            out[c["params"]["case"]] = t
    return out


def ncu_median(path, reps=30):
    """Median gpu__time_duration.sum (ms) of the last `reps` non-fill kernels."""
    with open(path) as f:
        text = f.read()
    start = text.find('"ID"')
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    durations = []
    for row in rows:
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        if "fill" in row.get("Kernel Name", "").lower():
            continue
        value = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "nsecond")
        scale = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0,
                 "second": 1e3, "s": 1e3}[unit]
        durations.append(value * scale)
    return statistics.median(durations[-reps:]), len(durations)


def pct(a, b):
    return f"{100 * (a - b) / b:+.1f}%"


def main(outdir):
    r1 = runner_timings(os.path.join(outdir, "run1", "results.json"))
    r2 = runner_timings(os.path.join(outdir, "run2", "results.json"))
    variants = {}
    for v in ("graph", "norest"):
        path = os.path.join(outdir, v, "results.json")
        variants[v] = runner_timings(path) if os.path.exists(path) else {}
    with open(os.path.join(outdir, "dobench.json")) as f:
        db = json.load(f)
    print("| case | runner run 1 | run 2 | run 1 vs 2 | SM clock while timed (MHz) | do_bench (rounds spread) | runner vs do_bench "
          "| ncu, L2 flushed by ncu | runner vs it | ncu, L2 as left by a zeroing flush | runner vs it | runner, CUDA graph "
          "| runner, rest_ratio 0 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in CASES:
        a, b = r1[name]["median_ms"], r2[name]["median_ms"]
        mean = (a + b) / 2
        clocks = []
        for t in (r1[name], r2[name]):
            c = t.get("clocks")
            if c:
                held = f", held back in {c['throttled_readings']}/{c['readings']}" if c["throttled_readings"] else ""
                clocks.append(f"{c['sm_clock_mhz']} ({c['min_sm_clock_mhz']}-{c['max_sm_clock_mhz']}{held})")
        d = statistics.median(db[name])
        spread = (max(db[name]) - min(db[name])) / d
        na, _ = ncu_median(os.path.join(outdir, f"ncu-all-{name}.csv"))
        nn, _ = ncu_median(os.path.join(outdir, f"ncu-none-{name}.csv"))
        g, nr = (f"{variants[v][name]['median_ms']:.4f}" if name in variants[v] else "-" for v in ("graph", "norest"))
        print(f"| {name} | {a:.4f} | {b:.4f} | {pct(b, a)} | {'; '.join(clocks) or '-'} | {d:.4f} ({100 * spread:.1f}%) "
              f"| {pct(mean, d)} | {na:.4f} | {pct(mean, na)} | {nn:.4f} | {pct(mean, nn)} | {g} | {nr} |")


if __name__ == "__main__":
    main(sys.argv[1])
