#!/usr/bin/env python3
"""The table of scripts/gpu-host/launch-cost-study.sh's output: per fresh
process, xrun's kernel-clock median at N = 512 split into span and launch
cost, and Nsight Compute's gpu__time_duration median of the same kernel.

    python3 scripts/gpu-host/launch-cost-table.py OUTDIR
"""
import csv
import glob
import json
import os
import statistics
import sys


def ncu_median(path):
    vals = []
    with open(path) as f:
        lines = f.read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        return None
    for row in csv.DictReader(lines[start:]):
        if row.get("Metric Name") == "gpu__time_duration.sum":
            v = float(row["Metric Value"].replace(",", ""))
            unit = row.get("Metric Unit", "")
            vals.append(v / 1e3 if unit in ("nsecond", "ns") else v if unit in ("usecond", "us") else v * 1e3)
    return statistics.median(vals) if vals else None


def main(out):
    print("| source | process | cuBLAS (us) | span | launch | Triton (us) | span | launch |")
    print("|---|---|---|---|---|---|---|---|")
    for f in sorted(glob.glob(os.path.join(out, "run*", "results.json"))):
        r = json.load(open(f))
        c = next(c for c in r["cases"] if int(c["params"]["N"]) == 512)
        cells = []
        for impl in ("cublas", "triton"):
            t = c["results"][impl]["timing"]
            k = t.get("kernel") or {}
            cells += ["%.3f" % (t["median_ms"] * 1e3), "%.3f" % (k.get("median_ms", 0) * 1e3), "%.3f" % (k.get("launch_ms", 0) * 1e3)]
        print("| xrun | %s | %s |" % (os.path.basename(os.path.dirname(f)), " | ".join(cells)))
    i = 1
    while os.path.exists(os.path.join(out, "ncu-cublas-%d.raw" % i)):
        cu, tr = ncu_median(os.path.join(out, "ncu-cublas-%d.raw" % i)), ncu_median(os.path.join(out, "ncu-triton-%d.raw" % i))
        fmt = lambda v: "%.3f" % v if v is not None else "-"
        print("| ncu | %d | %s | | | %s | | |" % (i, fmt(cu), fmt(tr)))
        i += 1


if __name__ == "__main__":
    main(sys.argv[1])
