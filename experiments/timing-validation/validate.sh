#!/usr/bin/env bash
# The timing validation in one call on a GPU machine (README.md):
#   experiments/timing-validation/validate.sh OUTDIR
# Needs bin/xrun-runner (make build), torch, triton and ncu.
set -euo pipefail
out=$1
e=experiments/timing-validation
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv > "$out/nvidia-smi.csv"
for run in run1 run2; do
  s=$(date +%s%N)
  bin/xrun-runner --experiment $e --out "$out/$run" > "$out/$run.log" 2>&1 || echo "$run: exit $?"
  echo "$run: $(( ($(date +%s%N) - s) / 1000000 )) ms" >> "$out/wall.txt"
done
python3 $e/independent.py dobench > "$out/dobench.json"
# ncu in both cache modes, after the runner's read flush: --cache-control
# none sees the L2 as the runner leaves it, all flushes and invalidates
# every cache first (ncu's default).
# none runs twice: the second run (ncu-none-2) is ncu's own spread.
for cc in all none none-2; do
  ncu --clock-control none --cache-control ${cc%-2} --nvtx --metrics gpu__time_duration.sum --csv \
    python3 $e/independent.py ncu read > "$out/ncu-$cc.csv" 2> "$out/ncu-$cc.err" || echo "ncu $cc: exit $?"
done
# Variants of the spec's method, in sibling directories so that the
# spec's relative include still holds: timed through a CUDA graph, and
# back to back (no rest between samples), and with the kernel clock for
# calls of any length (no kernel_clock_max_ms).
variant() {
  local name=$1 method=$2 g=experiments/.timing-validation-$1
  mkdir -p "$g"
  cp -r $e/validation.py $e/softmax "$g/"
  sed "s#^criteria:#  method: {$method}\ncriteria:#" $e/xrun.yaml > "$g/xrun.yaml"
  bin/xrun-runner --experiment "$g" --out "$out/$name" > "$out/$name.log" 2>&1 || echo "$name: exit $?"
}
# A call that waits for the GPU: the hold times out, the worker times it
# with nothing held back (host-sync/).
bin/xrun-runner --experiment $e/host-sync --out "$out/host-sync" > "$out/host-sync.log" 2>&1 || echo "host-sync: exit $?"
variant graph "cuda_graph: true"
variant norest "rest_ratio: 0"
variant nolimit "kernel_clock_max_ms: 0"
python3 $e/compare.py "$out" | tee "$out/table.md"
