#!/usr/bin/env bash
# The heavy-kernels benchmark of docs/performance.md ("Heavy kernels at the
# power cap"), with the runner bare on a GPU machine (bin/xrun-runner, or
# XRUN_RUNNER), experiments/heavy-kernels:
#   scripts/gpu-host/heavy-bench.sh WORK nights CLEAN SLOWED   # CLEAN nights, then SLOWED with HEAVY_SLOWDOWN=1.1, one Triton cache
#   scripts/gpu-host/heavy-bench.sh WORK cold RUNS IDLE        # RUNS first runs, each on a fresh cache after IDLE s of GPU idle, then a retune on a warm GPU
# Each run's results.json and log land in WORK/<mode>/<run>/; WORK/<mode>.tar.gz
# holds them all. The history and the dashboard are made from them by
# xrun history import, xrun regress and xrun report (docs/regressions.md).
set -uo pipefail
work=$1 mode=$2 a=$3 b=$4
runner=${XRUN_RUNNER:-bin/xrun-runner}
exp=experiments/heavy-kernels
dir=$work/$mode
mkdir -p "$dir"
smi() { nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active --format=csv,noheader; }
run() { # label, then environment assignments
  local label=$1; shift
  local start; start=$(date +%s)
  echo "$label before: $(smi)" >> "$dir/smi.txt"
  env "$@" "$runner" --experiment "$exp" --out "$dir/$label" > "$dir/$label.log" 2>&1
  local rc=$?
  echo "$label after: $(smi)" >> "$dir/smi.txt"
  echo "== $label: exit $rc in $(( $(date +%s) - start )) s"
  grep -E "autotuned|checked|warmed|WRONG|error" "$dir/$label.log" | sed 's/^/   /' | head -40
}
case "$mode" in
nights)
  cache=$(mktemp -d)
  for i in $(seq 1 "$a"); do
    run "$(printf night-%02d "$i")" TRITON_CACHE_DIR="$cache"
    # A night whose implementations did not all run stops the series: the
    # rest would judge nothing.
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); bad = [n + " " + c["label"] for c in r["cases"] for n, i in c["results"].items() if i["status"] != "ok"]; sys.exit("not ok: " + ", ".join(bad) if bad else 0)' \
      "$dir/$(printf night-%02d "$i")/results.json" || break
  done
  for i in $(seq 1 "$b"); do run "$(printf slowed-%02d "$i")" TRITON_CACHE_DIR="$cache" HEAVY_SLOWDOWN=1.1; done ;;
cold)
  for i in $(seq 1 "$a"); do
    sleep "$b"
    run "$(printf first-%02d "$i")" TRITON_CACHE_DIR="$(mktemp -d)"
  done
  # The GPU is warm from the last run: a retune on a fresh cache now is
  # what the first runs are held against.
  run retune-warm TRITON_CACHE_DIR="$(mktemp -d)" ;;
*)
  echo "usage: $0 WORK nights CLEAN SLOWED | WORK cold RUNS IDLE" >&2; exit 2 ;;
esac
(cd "$work" && tar czf "$mode.tar.gz" "$mode")
