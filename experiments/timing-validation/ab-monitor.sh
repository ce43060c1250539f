#!/usr/bin/env bash
# Does reading the clocks while timing move the timings? Runs the two short
# cases with the clock monitor on and off, alternating, three times each:
#   experiments/timing-validation/ab-monitor.sh OUTDIR
set -euo pipefail
out=$1
e=experiments/timing-validation
s=experiments/.timing-validation-short
mkdir -p "$out" "$s"
sed 's/sweep: {case: \[mm_small, add_32m, mm_large\]}/sweep: {case: [mm_small, add_32m]}/' $e/xrun.yaml > "$s/xrun.yaml"
for i in 1 2 3; do
  bin/xrun-runner --experiment "$s" --out "$out/on$i" > "$out/on$i.log" 2>&1 || echo "on$i: exit $?"
  XRUN_CLOCK_MONITOR=off bin/xrun-runner --experiment "$s" --out "$out/off$i" > "$out/off$i.log" 2>&1 || echo "off$i: exit $?"
done
python3 - "$out" <<'PY'
import json, sys, os
out = sys.argv[1]
print("| run | case | median (ms) | q1 | q3 | p80 | samples |")
print("|---|---|---|---|---|---|---|")
for run in ["on1", "off1", "on2", "off2", "on3", "off3"]:
    r = json.load(open(os.path.join(out, run, "results.json")))
    for c in r["cases"]:
        t = c["results"]["kernel"]["timing"]
        print(f"| {run} | {c['params']['case']} | {t['median_ms']:.5f} | {t['q1_ms']:.5f} | {t['q3_ms']:.5f} | {t['p80_ms']:.5f} | {t['samples']} |")
PY
