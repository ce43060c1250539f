"""Tables for wall-time.sh: wall time per run, and per case and
implementation each run's median, samples and standard error, the two
runs' agreement, and the event clock beside the kernel clock.

    python3 wall-table.py OUTDIR ROUNDS
"""

import json
import os
import statistics
import sys


def load(outdir, name):
    with open(os.path.join(outdir, name, "results.json")) as f:
        r = json.load(f)
    out = {}
    for c in r["cases"]:
        for impl, ir in c["results"].items():
            if ir.get("timing"):
                out[(c["label"], impl)] = ir["timing"]
    return out


def main(outdir, rounds):
    wall = {}
    with open(os.path.join(outdir, "wall.txt")) as f:
        for line in f:
            name, ms = line.split()
            wall[name] = int(ms) / 1e3
    sides = ("before", "after")
    print("| run | " + " | ".join(f"{s} {i}" for i in range(1, rounds + 1) for s in sides) + " |")
    print("|---|" + "---|" * (2 * rounds))
    print("| wall time (s) | " + " | ".join(f"{wall.get(f'{s}{i}', 0):.1f}" for i in range(1, rounds + 1) for s in sides) + " |")
    for s in sides:
        ws = [wall[f"{s}{i}"] for i in range(1, rounds + 1) if f"{s}{i}" in wall]
        print(f"\n{s}: mean wall time {statistics.mean(ws):.1f} s over {len(ws)} runs")
    res = {f"{s}{i}": load(outdir, f"{s}{i}") for i in range(1, rounds + 1) for s in sides}
    print("\n| case | impl | before: median µs (events), run 1 / 2 | apart | samples | stderr_rel | "
          "after: median µs (clock), run 1 / 2 | apart | samples | stderr_rel | after, events run 1 / 2 | apart |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in res["before1"]:
        b1, b2 = res["before1"][key], res.get("before2", {}).get(key)
        a1, a2 = res["after1"].get(key), res.get("after2", {}).get(key)
        if not (b2 and a1 and a2):
            continue
        def ev(t):
            return (t.get("events") or t)["median_ms"]
        print(f"| {key[0]} | {key[1]} | {b1['median_ms'] * 1e3:.3f} / {b2['median_ms'] * 1e3:.3f} "
              f"| {100 * abs(b2['median_ms'] / b1['median_ms'] - 1):.1f}% | {b1['samples']} / {b2['samples']} "
              f"| {max(b1['stderr_rel'], b2['stderr_rel']):.4f} "
              f"| {a1['median_ms'] * 1e3:.3f} / {a2['median_ms'] * 1e3:.3f} ({a1.get('clock', 'events')}) "
              f"| {100 * abs(a2['median_ms'] / a1['median_ms'] - 1):.1f}% | {a1['samples']} / {a2['samples']} "
              f"| {max(a1['stderr_rel'], a2['stderr_rel']):.4f} "
              f"| {ev(a1) * 1e3:.3f} / {ev(a2) * 1e3:.3f} | {100 * abs(ev(a2) / ev(a1) - 1):.1f}% |")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2)
