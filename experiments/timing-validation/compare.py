"""Lines up the runner's clocks with Nsight Compute and do_bench.

    python3 compare.py OUTDIR

OUTDIR (as validate.sh leaves it) holds run1/ and run2/ (two runner runs back
to back), graph/ (a runner run with method.cuda_graph), norest/ (one with
method.rest_ratio 0: samples back to back), nolimit/ (one with
method.kernel_clock_max_ms 0: the kernel clock at any length), dobench.json (three do_bench
rounds per case), and ncu-all.csv / ncu-none.csv (Nsight Compute with
--cache-control all, and with --cache-control none after the runner's read
flush: the L2 as the runner leaves it). Prints two markdown tables: per case
the runner's headline median (and its clock) in both runs, its two clocks
(the CUDA events; the CUPTI span, to which the kernel clock adds
methodology.launch_ms), ncu's median gpu__time_duration in both cache modes
and the differences; then do_bench and the method variants.
"""

import collections
import csv
import gzip
import io
import json
import os
import statistics
import sys

CASES = ["add_768k", "softmax_2048x1024", "mm_small", "softmax_8192x2048", "add_32m", "mm_large"]


def runner(path):
    with open(path) as f:
        r = json.load(f)
    out = {}
    for c in r["cases"]:
        t = c["results"].get("kernel", {}).get("timing")
        if t:
            out[c["params"]["case"]] = t
    return out, r["methodology"]


def ncu_medians(path, warm=10):
    """Median gpu__time_duration (ms) per NVTX range k_<case>, past its
    first `warm` launches (of 20 or fewer: of the last 10)."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"  # as kept under results/
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        text = f.read()
    rows = list(csv.DictReader(io.StringIO(text[text.find('"ID"'):])))
    by = collections.defaultdict(list)
    for row in rows:
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        tag = ""
        for k, v in row.items():
            if k and "Push/Pop" in k and "k_" in (v or ""):
                tag = v[v.find("k_") + 2:].split(":")[0].strip()
        if not tag:
            continue  # the flush
        scale = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0}[row.get("Metric Unit", "nsecond")]
        by[tag].append(float(row["Metric Value"].replace(",", "")) * scale)
    return {k: statistics.median(v[warm:] if len(v) > 2 * warm else v[-10:]) for k, v in by.items()}


def pct(a, b):
    return f"{100 * (a - b) / b:+.1f}%"


def us(ms):
    return f"{ms * 1e3:.2f}" if ms < 1 else f"{ms * 1e3:.0f}"


def main(outdir):
    r1, m1 = runner(os.path.join(outdir, "run1", "results.json"))
    r2, _ = runner(os.path.join(outdir, "run2", "results.json"))
    variants = {}
    for v in ("graph", "norest", "nolimit"):
        path = os.path.join(outdir, v, "results.json")
        variants[v] = runner(path)[0] if os.path.exists(path) else {}
    na = ncu_medians(os.path.join(outdir, "ncu-all.csv"))
    nn = ncu_medians(os.path.join(outdir, "ncu-none.csv"))
    # ncu's own spread: a second run in the same cache state, where there is one.
    path = os.path.join(outdir, "ncu-none-2.csv")
    nn2 = ncu_medians(path) if os.path.exists(path) or os.path.exists(path + ".gz") else {}
    launch = m1.get("launch_ms", 0.0)
    print(f"launch_ms {launch * 1e3:.3f} us; timer floor (events around nothing) {m1.get('timer_floor_ms', 0) * 1e3:.2f} us\n")
    print("| case | runner run 1 (µs) | run 2 | 1 vs 2 | clock | events (run 1) | CUPTI span | ncu, L2 as the runner leaves it "
          "| runner vs it | events vs it | CUPTI vs it | ncu, caches flushed by ncu | runner vs it |"
          + (" ncu, same L2, second run | its spread | runner vs it |" if nn2 else ""))
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|---|" if nn2 else ""))
    for name in CASES:
        if name not in r1 or name not in r2:
            continue
        t1, t2 = r1[name], r2[name]
        a, b = t1["median_ms"], t2["median_ms"]
        mean = (a + b) / 2
        ev = (t1.get("events") or t1)["median_ms"] if t1.get("clock") == "kernel" else t1["median_ms"]
        k = t1.get("kernel", {}).get("median_ms")
        row = [name, us(a), us(b), pct(b, a), t1.get("clock", "events"), us(ev), us(k) if k else "-"]
        if name in nn:
            row += [us(nn[name]), pct(mean, nn[name]), pct(ev, nn[name]), pct(k, nn[name]) if k else "-"]
        else:
            row += ["-"] * 4
        row += [us(na[name]), pct(mean, na[name])] if name in na else ["-", "-"]
        if nn2:
            row += [us(nn2[name]), pct(nn2[name], nn[name]), pct(mean, nn2[name])] if name in nn2 and name in nn else ["-"] * 3
        print("| " + " | ".join(row) + " |")
    print()
    db = {}
    path = os.path.join(outdir, "dobench.json")
    if os.path.exists(path):
        with open(path) as f:
            db = json.load(f)
    print("| case | do_bench (spread of 3 rounds) | runner vs do_bench | runner, CUDA graph | runner, rest_ratio 0 "
          "| runner, kernel clock at any length | SM clock while timed (MHz), run 1 | samples run 1 / run 2 |")
    print("|---|---|---|---|---|---|---|---|")
    for name in CASES:
        if name not in r1 or name not in r2:
            continue
        mean = (r1[name]["median_ms"] + r2[name]["median_ms"]) / 2
        d = "-"
        vs = "-"
        if db.get(name):
            dm = statistics.median(db[name])
            d = f"{us(dm)} ({100 * (max(db[name]) - min(db[name])) / dm:.1f}%)"
            vs = pct(mean, dm)
        g, nr, nl = (us(variants[v][name]["median_ms"]) + (" (%s)" % variants[v][name].get("clock", "events") if v == "nolimit" else "")
                     if name in variants[v] else "-" for v in ("graph", "norest", "nolimit"))
        c = r1[name].get("clocks")
        clock = "-"
        if c:
            held = f", held back in {c['throttled_readings']}/{c['readings']}" if c["throttled_readings"] else ""
            clock = f"{c['sm_clock_mhz']} ({c['min_sm_clock_mhz']}-{c['max_sm_clock_mhz']}{held})"
        print(f"| {name} | {d} | {vs} | {g} | {nr} | {nl} | {clock} | {r1[name]['samples']} / {r2[name]['samples']} |")


if __name__ == "__main__":
    main(sys.argv[1])
