#!/usr/bin/env bash
# Wall time and precision of the softmax experiment (softmax/: 3 cases x 3
# implementations) under two runners, run alternately (docs/performance.md):
#   experiments/timing-validation/wall-time.sh OUTDIR BEFORE_RUNNER AFTER_RUNNER [ROUNDS]
set -euo pipefail
out=$1 before=$2 after=$3 rounds=${4:-2}
e=experiments/timing-validation/softmax
mkdir -p "$out"
: > "$out/wall.txt"
for i in $(seq 1 "$rounds"); do
  for side in before after; do
    bin=$before
    [ $side = after ] && bin=$after
    s=$(date +%s%N)
    $bin --experiment $e --out "$out/$side$i" > "$out/$side$i.log" 2>&1 || echo "$side$i: exit $?"
    echo "$side$i $(( ($(date +%s%N) - s) / 1000000 ))" >> "$out/wall.txt"
  done
done
python3 experiments/timing-validation/wall-table.py "$out" "$rounds" | tee "$out/table.md"
