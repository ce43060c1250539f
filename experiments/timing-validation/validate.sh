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
# The same cases timed through a CUDA graph (method.cuda_graph).
# (a sibling directory, so that the spec's relative include still holds).
g=experiments/.timing-validation-graph
mkdir -p "$g"
sed 's#^criteria:#  method: {cuda_graph: true}\ncriteria:#' $e/xrun.yaml > "$g/xrun.yaml"
bin/xrun-runner --experiment "$g" --out "$out/graph" > "$out/graph.log" 2>&1 || echo "graph: exit $?"
python3 $e/compare.py "$out" | tee "$out/table.md"
