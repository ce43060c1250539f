#!/usr/bin/env bash
# The softmax experiment with the kernel clock limited to calls under
# method.kernel_clock_max_ms (the default, twice), at any length
# (kernel_clock_max_ms: 0), and off (kernel_clock: false), one run each
# after the other, then a table per case and implementation (README.md):
#   experiments/timing-validation/long-calls.sh OUTDIR
# Needs bin/xrun-runner (make build), torch and triton.
set -euo pipefail
out=$1
e=experiments/timing-validation
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv > "$out/nvidia-smi.csv"
run() {
  local name=$1 method=$2 dir=$e/softmax
  if [ -n "$method" ]; then
    dir=experiments/.softmax-$name
    rm -rf "$dir" && cp -r $e/softmax "$dir"
    sed -i "s#^criteria:#  method: {$method}\ncriteria:#" "$dir/xrun.yaml"
  fi
  local s=$(date +%s%N)
  bin/xrun-runner --experiment "$dir" --out "$out/$name" > "$out/$name.log" 2>&1 || echo "$name: exit $?"
  echo "$name: $(( ($(date +%s%N) - s) / 1000000 )) ms" >> "$out/wall.txt"
}
run default ""
run nolimit "kernel_clock_max_ms: 0"
run events "kernel_clock: false"
run default-2 ""
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
runs = ["default", "default-2", "nolimit", "events"]
res = {}
for r in runs:
    with open(os.path.join(out, r, "results.json")) as f:
        res[r] = json.load(f)
print("| case | impl | " + " | ".join(runs) + " | default vs events | any length vs events |")
print("|---|---|" + "---|" * (len(runs) + 2))
for i, c in enumerate(res["default"]["cases"]):
    for impl in sorted(c["results"]):
        cells, med = [], {}
        for r in runs:
            t = (res[r]["cases"][i]["results"].get(impl) or {}).get("timing")
            if not t:
                cells.append("-")
                continue
            med[r] = t["median_ms"] * 1e3
            cells.append("%.2f (%s)" % (med[r], t.get("clock", "events")))
        d = lambda a: "%+.1f%%" % (100 * (med[a] - med["events"]) / med["events"]) if a in med and "events" in med else "-"
        print("| %s | %s | %s | %s | %s |" % (c["label"], impl, " | ".join(cells), d("default"), d("nolimit")))
PY
