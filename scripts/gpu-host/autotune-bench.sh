#!/usr/bin/env bash
# The autotuned-GEMM benchmark of docs/performance.md ("Autotuned kernels"),
# on a GPU Docker host (scripts/gpu-host/up.sh, make-base.sh) with xrun on PATH:
#   scripts/gpu-host/autotune-bench.sh OUTDIR submits LABEL=FLAGS...   # xrun submit, one per label
#   scripts/gpu-host/autotune-bench.sh OUTDIR reference RESULTS          # Nsight Compute and do_bench
# submits: experiments/autotuned-matmul through submit-variants.sh
# (OUTDIR/LABEL/results.json each). reference: the config RESULTS chose at
# N = 2048, 4096 and 8192 under ncu --clock-control none (10 calls each,
# gpu__time_duration.sum) and do_bench, cuBLAS beside it: OUTDIR/ncu.csv,
# OUTDIR/do_bench.jsonl. scripts/gpu-host/autotune-table.py reads them all.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$1 what=$2
shift 2
mkdir -p "$out"
case "$what" in
submits)
  "$here/submit-variants.sh" "$out" experiments/autotuned-matmul "$@" ;;
reference)
  res=$1
  : > "$out/ncu.csv"
  for n in 2048 4096 8192; do
    for impl in triton cublas; do
      ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum --csv \
        python3 "$here/autotune-reference.py" --ncu "$res" "$n" "$impl" > "$out/ncu-$n-$impl.raw" 2>&1
      sed -n '/^"ID"/,$p' "$out/ncu-$n-$impl.raw" | sed "s/^/$n,$impl,/" >> "$out/ncu.csv"
    done
  done
  python3 "$here/autotune-reference.py" --do-bench "$res" 2048 4096 8192 > "$out/do_bench.jsonl" ;;
*)
  echo "usage: $0 OUTDIR submits LABEL=FLAGS... | OUTDIR reference RESULTS" >&2; exit 2 ;;
esac
