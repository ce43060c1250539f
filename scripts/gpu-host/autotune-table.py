#!/usr/bin/env python3
"""The autotuned-GEMM benchmark's table (docs/performance.md, "Autotuned
kernels") from what scripts/gpu-host/autotune-bench.sh left in OUTDIR:
per N, each submit's median, config and verdict for the Triton kernel and
cuBLAS, the spread of the medians run to run, and Nsight Compute's and
do_bench's medians of the same config.

  python3 scripts/gpu-host/autotune-table.py OUTDIR [LABEL...]
"""

import csv
import glob
import json
import os
import statistics
import sys


def load_runs(out, labels):
    if not labels:
        labels = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(out, "*", "results.json")))
    runs = []
    for label in labels:
        with open(os.path.join(out, label, "results.json")) as f:
            runs.append((label, json.load(f)))
    return runs


def by_n(r):
    return {int(c["params"]["N"]): c for c in r["cases"]}


def verdict(r, n):
    for c in r.get("comparisons") or []:
        if c["a"] == "triton" and int(c["params"]["N"]) == n:
            return "%.3fx %s" % (c["speedup"], c["verdict"])
    return "-"


def ncu(out):
    """{(n, impl): median ms of gpu__time_duration per call}."""
    path = os.path.join(out, "ncu.csv")
    if not os.path.exists(path):
        return {}
    vals = {}
    with open(path) as f:
        for row in csv.reader(f):
            if len(row) < 4 or row[2] == "ID":
                continue
            n, impl = int(row[0]), row[1]
            unit, value = row[-3], row[-1]
            try:
                v = float(value.replace(",", ""))
            except ValueError:
                continue
            scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "ns": 1e-6, "us": 1e-3, "ms": 1.0}.get(unit, 1e-6)
            vals.setdefault((n, impl), []).append(v * scale)
    return {k: statistics.median(v) for k, v in vals.items()}


def do_bench(out):
    path = os.path.join(out, "do_bench.jsonl")
    res = {}
    if os.path.exists(path):
        for line in open(path):
            d = json.loads(line)
            res[(d["n"], d["impl"])] = d["do_bench_median_ms"]
    return res


def main():
    out, labels = sys.argv[1], sys.argv[2:]
    runs = load_runs(out, labels)
    nc, db = ncu(out), do_bench(out)
    ns = sorted(by_n(runs[0][1]))
    print("| N | impl | " + " | ".join(l for l, _ in runs) + " | spread | ncu | xrun/ncu | do_bench |")
    print("|---|---|" + "---|" * len(runs) + "---|---|---|---|")
    for n in ns:
        for impl in ("triton", "cublas"):
            cells, meds = [], []
            for _, r in runs:
                ir = by_n(r)[n]["results"].get(impl, {})
                t = ir.get("timing")
                if not t:
                    cells.append(ir.get("status", "-"))
                    continue
                meds.append(t["median_ms"])
                cell = "%.4g" % t["median_ms"]
                if impl == "triton":
                    cell += " %s" % ",".join("%s (%s)" % (a["config"], a["source"]) for a in ir.get("autotune", []))
                    cell += " %s" % verdict(r, n)
                cells.append(cell)
            spread = "%.1f %%" % (100 * (max(meds) / min(meds) - 1)) if meds else "-"
            ref = nc.get((n, impl))
            ratio = "%.3f" % (statistics.median(meds) / ref) if ref and meds else "-"
            print("| %d | %s | %s | %s | %s | %s | %s |" % (n, impl, " | ".join(cells), spread,
                                                              "%.4g" % ref if ref else "-", ratio,
                                                              "%.4g" % db[(n, impl)] if (n, impl) in db else "-"))


if __name__ == "__main__":
    main()
