#!/usr/bin/env bash
# The stopping rule's minimum sampling time, measured: each experiment is
# submitted attached by one xrun as it is (method.min_time_s unset: the
# default) and with benchmark.method.min_time_s set to each VALUE, in turn,
# ROUNDS times, so that every setting sees the same machine in the same
# minutes. The first round builds the image and fills the compile cache.
#   scripts/gpu-host/min-time.sh OUTDIR ROUNDS "VALUE..." EXPERIMENT...
# OUTDIR/<setting>/round<N>/ get run-experiments.sh's logs, tables and
# summary.tsv; OUTDIR/summary.tsv has every submit with its setting and
# round; OUTDIR/medians.tsv every timing's median, samples, relative
# standard error and wall time, read from results.json.
# docs/performance.md ("The minimum sampling time") reads them.
# PAUSE (seconds, default 0) passes before each submit: a researcher's edit,
# in which the standby the previous submit left finishes its imports.
set -uo pipefail
out=$1 rounds=$2 values=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
xrun=${XRUN:-xrun}
mkdir -p "$out/specs"
printf 'setting\tround\texperiment\tjob\texit\twall_s\tto_first_timing_s\n' > "$out/summary.tsv"
printf 'setting\tround\texperiment\tcase\timpl\tmedian_ms\tsamples\trse\tconverged\n' > "$out/medians.tsv"
for exp in "$@"; do
  name=$(basename "$exp")
  for v in $values; do
    # A copy of the experiment with the setting; its name stays, so the
    # image and the compile cache are the same as the original's.
    d=$out/specs/$v/$name
    mkdir -p "$(dirname "$d")" && rm -rf "$d" && cp -r "$exp" "$d"
    if grep -q '^  method:' "$d/xrun.yaml"; then
      echo "min-time.sh: $exp sets benchmark.method already; give one that does not" >&2
      exit 2
    fi
    sed -i "s/^benchmark:\$/benchmark:\n  method: {min_time_s: $v}/" "$d/xrun.yaml"
  done
  for round in $(seq 1 "$rounds"); do
    for setting in default $values; do
      sleep "${PAUSE:-0}"
      dir=$exp
      [ "$setting" = default ] || dir=$out/specs/$setting/$name
      run=$out/$setting/round$round
      XRUN=$xrun "$here/run-experiments.sh" "$run" attached "$dir" | tail -1 |
        awk -v s="$setting" -v r="$round" -F'\t' '{ printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s, r, $1, $3, $4, $5, $6 }' >> "$out/summary.tsv"
      job=$(tail -1 "$run/summary.tsv" | cut -f3)
      "$xrun" results --json "$job" 2>/dev/null | python3 "$here/medians.py" "$setting" "$round" "$name" >> "$out/medians.tsv"
    done
  done
done
cat "$out/summary.tsv"
