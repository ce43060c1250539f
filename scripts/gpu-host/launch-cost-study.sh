#!/usr/bin/env bash
# Where the spread of a 5 us kernel's median between runs comes from
# (docs/performance.md, "Where the 3 % at N = 512 comes from"): RUNS runs of
# experiments/autotuned-matmul at N = 512 and 1024 through `xrun run --local`
# (each a fresh process, no Docker), then Nsight Compute's
# gpu__time_duration of cuBLAS and of the Triton config run1 chose at
# N = 512 in RUNS fresh processes each (--clock-control none, 10 calls).
#   scripts/gpu-host/launch-cost-study.sh OUTDIR [RUNS] [XRUN]
# OUTDIR/runN/results.json, OUTDIR/ncu-IMPL-N.raw; then
#   python3 scripts/gpu-host/autotune-split.py OUTDIR
#   python3 scripts/gpu-host/launch-cost-table.py OUTDIR
set -uo pipefail
out=$1 runs=${2:-5} xrun=${3:-xrun}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$out"
# A copy of the experiment with the two small sizes alone, beside it so
# that its include (../../kernels/...) still resolves.
exp="$root/experiments/.launch-cost-study"
rm -rf "$exp" && cp -r "$root/experiments/autotuned-matmul" "$exp"
sed -i 's/N: \[512, 1024, 2048, 4096, 8192\]/N: [512, 1024]/' "$exp/xrun.yaml"
grep -q 'N: \[512, 1024\]' "$exp/xrun.yaml" || { echo "launch-cost-study: could not cut the sweep" >&2; exit 2; }
for i in $(seq "$runs"); do
  XDG_DATA_HOME="$out/xdg" "$xrun" run --local --out "$out/run$i" "$exp" > "$out/run$i.table" 2> "$out/run$i.log"
  echo "run$i: exit $? ($(grep -c . "$out/run$i.table") table lines)"
done
for impl in cublas triton; do
  for i in $(seq "$runs"); do
    ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum --csv \
      python3 "$here/autotune-reference.py" --ncu "$out/run1/results.json" 512 "$impl" > "$out/ncu-$impl-$i.raw" 2>&1
  done
done
rm -rf "$exp"
