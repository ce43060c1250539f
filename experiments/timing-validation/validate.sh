#!/usr/bin/env bash
# The timing validation in one call on a GPU machine (README.md):
#   experiments/timing-validation/validate.sh OUTDIR
# Needs bin/xrun-runner (make build), torch, triton and ncu.
set -euo pipefail
out=$1
e=experiments/timing-validation
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv > "$out/nvidia-smi.csv"
bin/xrun-runner --experiment $e --out "$out/run1" > "$out/run1.log" 2>&1 || echo "run1: exit $?"
bin/xrun-runner --experiment $e --out "$out/run2" > "$out/run2.log" 2>&1 || echo "run2: exit $?"
python3 $e/independent.py dobench > "$out/dobench.json"
for cc in all none; do
  for c in mm_small add_32m mm_large; do
    ncu --clock-control none --cache-control $cc --metrics gpu__time_duration.sum --csv \
      python3 $e/independent.py ncu $c > "$out/ncu-$cc-$c.csv" 2> "$out/ncu-$cc-$c.err" || echo "ncu $cc $c: exit $?"
  done
done
# Variants of the spec's method, in sibling directories so that the
# spec's relative include still holds: timed through a CUDA graph, and
# back to back (no rest between samples).
variant() {
  local name=$1 method=$2 g=experiments/.timing-validation-$1
  mkdir -p "$g"
  sed "s#^criteria:#  method: {$method}\ncriteria:#" $e/xrun.yaml > "$g/xrun.yaml"
  bin/xrun-runner --experiment "$g" --out "$out/$name" > "$out/$name.log" 2>&1 || echo "$name: exit $?"
}
# A call that waits for the GPU: the hold times out, the worker times it
# with nothing held back (host-sync/).
bin/xrun-runner --experiment $e/host-sync --out "$out/host-sync" > "$out/host-sync.log" 2>&1 || echo "host-sync: exit $?"
variant graph "cuda_graph: true"
variant norest "rest_ratio: 0"
python3 $e/compare.py "$out" | tee "$out/table.md"
