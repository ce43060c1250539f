#!/usr/bin/env bash
# Does a launch measure keep its value from one process to the next, and
# does Nsight Compute? Alternates NCU Nsight Compute processes over the three
# small validation cases (--cache-control none after the runner's read
# flush, 60 launches per case) with PROBES processes of `clock-probe.py
# streams`, then prints per case ncu's median in each process and, per probe
# process, CUPTI's span plus each launch measure against ncu's median of
# medians (README.md):
#   experiments/timing-validation/process-spread.sh OUTDIR [NCU [PROBES]]
# Needs torch, triton and ncu.
set -euo pipefail
out=$1 ncu_runs=${2:-6} probes=${3:-12}
e=experiments/timing-validation
cases=add_768k,softmax_2048x1024,mm_small
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv > "$out/nvidia-smi.csv"
for i in $(seq "$probes"); do
  python3 $e/clock-probe.py streams >> "$out/streams.jsonl"
  if [ "$i" -le "$ncu_runs" ]; then
    ncu --clock-control none --cache-control none --nvtx --metrics gpu__time_duration.sum --csv \
      python3 $e/independent.py ncu read $cases > "$out/ncu-$i.csv" 2> "$out/ncu-$i.err" || echo "ncu $i: exit $?"
  fi
done
python3 - "$out" <<'PY'
import glob, json, os, statistics, sys
sys.path.insert(0, "experiments/timing-validation")
from compare import ncu_medians
out = sys.argv[1]
cases = ["add_768k", "softmax_2048x1024", "mm_small"]
ncu = [ncu_medians(p.removesuffix(".gz")) for p in sorted(glob.glob(os.path.join(out, "ncu-*.csv*")))]
ref = {c: statistics.median(m[c] for m in ncu) * 1e3 for c in cases}
print("ncu per process (us): " + "; ".join("%s %s" % (c, " ".join("%.3f" % (m[c] * 1e3) for m in ncu)) for c in cases))
print("ncu median of medians (us): " + " ".join("%s %.3f" % (c, ref[c]) for c in cases))
print("| process | default | graph | new streams | " + " | ".join("%s span+default / +graph / +new" % c for c in cases) + " |")
for i, line in enumerate(open(os.path.join(out, "streams.jsonl"))):
    r = json.loads(line)
    new = statistics.median(r["new"])
    cells = []
    for c in cases:
        sp = r[c]["span_us"]
        cells.append(" / ".join("%+.1f%%" % (100 * (sp + g - ref[c]) / ref[c]) for g in (r["default"], r["graph"], new)))
    print("| %d | %.3f | %.3f | %s | %s |" % (i + 1, r["default"], r["graph"], " ".join("%.3f" % g for g in r["new"]), " | ".join(cells)))
PY
