#!/usr/bin/env bash
# Runs experiments with the runner on a GPU machine without Docker, the way
# the results under experiments/*/results/ were made:
#   scripts/device-run.sh OUTDIR EXPERIMENT...
# Each experiment's results.json, results.md and logs land in OUTDIR/<name>/.
set -uo pipefail
out=$1; shift
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$out/nvidia-smi.csv"
for exp in "$@"; do
  name=$(basename "$exp")
  start=$(date +%s)
  bin/xrun-runner --experiment "$exp" --out "$out/$name" > "$out/$name.log" 2>&1
  rc=$?
  echo "== $name: exit $rc in $(( $(date +%s) - start )) s"
  sed -n '/^CASE/,$p' "$out/$name.log" | head -60
done
