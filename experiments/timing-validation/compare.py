"""Lines up the runner's medians with do_bench and Nsight Compute.

    python3 compare.py OUTDIR   # OUTDIR holds run1/results.json, run2/results.json,
                                # dobench.json and ncu-<case>.csv

Prints a markdown table: per case the runner's median of two runs, do_bench's
median, ncu's median kernel duration, and the relative differences.
"""

import csv
import io
import json
import os
import statistics
import sys

CASES = ["mm_small", "add_32m", "mm_large"]


def runner_medians(path):
    with open(path) as f:
        r = json.load(f)
    out = {}
    for c in r["cases"]:
        res = c["results"].get("kernel", {})
        t = res.get("timing")
        if t:
            out[c["params"]["case"]] = (t["median_ms"], t["samples"], t["converged"], t["stderr_rel"])
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
        name = row.get("Kernel Name", "")
        if "fill" in name.lower():
            continue
        value = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "nsecond")
        scale = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0, "second": 1e3, "s": 1e3}[unit]
        durations.append(value * scale)
    return statistics.median(durations[-reps:]), len(durations)


def main(outdir):
    r1 = runner_medians(os.path.join(outdir, "run1", "results.json"))
    r2 = runner_medians(os.path.join(outdir, "run2", "results.json"))
    with open(os.path.join(outdir, "dobench.json")) as f:
        db = json.load(f)
    print("| case | runner run 1 (ms) | runner run 2 (ms) | run1 vs run2 | do_bench (ms) | runner vs do_bench | ncu (ms) | runner vs ncu | samples | converged |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in CASES:
        a, n1, conv1, _ = r1[name]
        b, _, conv2, _ = r2[name]
        d = db[name]
        k, _ = ncu_median(os.path.join(outdir, f"ncu-{name}.csv"))
        mean = (a + b) / 2
        print(f"| {name} | {a:.4f} | {b:.4f} | {100*(b-a)/a:+.2f}% | {d:.4f} | {100*(mean-d)/d:+.2f}% | {k:.4f} | {100*(mean-k)/k:+.2f}% | {n1} | {conv1 and conv2} |")


if __name__ == "__main__":
    main(sys.argv[1])
