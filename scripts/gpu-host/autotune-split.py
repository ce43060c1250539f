#!/usr/bin/env python3
"""Splits each kernel-clock median of autotuned-matmul runs into the kernels'
span and the launch cost the runner adds (timing.kernel.median_ms and
timing.kernel.launch_ms of results.json), for the smallest sizes.

    python3 scripts/gpu-host/autotune-split.py DIR...   # DIR/*/results.json
"""
import glob
import json
import os
import sys


def main(dirs):
    print("| machine | run | N | impl | median (us) | kernel span (us) | launch cost (us) |")
    print("|---|---|---|---|---|---|---|")
    for d in dirs:
        for f in sorted(glob.glob(os.path.join(d, "*", "results.json"))):
            r = json.load(open(f))
            run = os.path.basename(os.path.dirname(f))
            for c in r["cases"]:
                if c["params"]["N"] > 1024:
                    continue
                for name, ir in sorted(c["results"].items()):
                    t = ir.get("timing") or {}
                    k = t.get("kernel") or {}
                    print("| %s | %s | %d | %s | %.3f | %.3f | %.3f |" % (
                        os.path.basename(d), run, c["params"]["N"], name,
                        t.get("median_ms", 0) * 1e3, k.get("median_ms", 0) * 1e3, k.get("launch_ms", 0) * 1e3))


if __name__ == "__main__":
    main(sys.argv[1:])
