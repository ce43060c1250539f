#!/usr/bin/env bash
# Warm starts, old xrun against new, in one call on one GPU host: each
# experiment is submitted attached by both binaries in turn (old, new, old,
# new, ...), so that both see the same machine in the same minutes. The
# first submit of each binary builds its image and, for the new one, fills
# its compile cache volume; the later ones are the warm reruns a researcher
# makes after an edit.
#   scripts/gpu-host/warm-start.sh OUTDIR OLD_XRUN NEW_XRUN ROUNDS EXPERIMENT...
# OUTDIR/old and OUTDIR/new get run-experiments.sh's logs, tables and
# summary.tsv (wall time and the time to the first timed batch, from the
# submit), one line per submit; OUTDIR/summary.tsv has both, with the binary
# and the round. docs/performance.md ("Warm starts") reads them.
# PAUSE (seconds, default 0) passes between two submits: the time a
# researcher takes to edit, in which a standby the new xrun left finishes
# its imports rather than sharing the CPU with the other binary's job.
# Each binary submits its own copy of an experiment (OUTDIR/exp-old/NAME,
# named NAME-old in its xrun.yaml; likewise -new): a standby serves the next
# submit of its experiment, and a new one replaces the experiment's older
# ones, so two binaries submitting one experiment in turn would remove each
# other's.
set -uo pipefail
out=$1 old=$2 new=$3 rounds=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
printf 'binary\tround\texperiment\tjob\texit\twall_s\tto_first_timing_s\n' > "$out/summary.tsv"
printf 'binary\tround\texperiment\tcase\timpl\tmedian_ms\tsamples\trse\tconverged\n' > "$out/medians.tsv"
for exp in "$@"; do
  for side in old new; do
    rm -rf "$out/exp-$side/$(basename "$exp")"
    mkdir -p "$out/exp-$side"
    cp -r "$exp" "$out/exp-$side/"
    sed -i "s/^name: *\(.*\)$/name: \1-$side/" "$out/exp-$side/$(basename "$exp")/xrun.yaml"
  done
  for round in $(seq 1 "$rounds"); do
    for side in old new; do
      sleep "${PAUSE:-0}"
      bin=$old
      [ "$side" = new ] && bin=$new
      dir=$out/$side/round$round
      XRUN=$bin "$here/run-experiments.sh" "$dir" attached "$out/exp-$side/$(basename "$exp")" | tail -1 |
        awk -v s="$side" -v r="$round" -F'\t' '{ printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s, r, $1, $3, $4, $5, $6 }' >> "$out/summary.tsv"
      job=$(tail -1 "$dir/summary.tsv" | cut -f3)
      "$bin" results --json "$job" 2>/dev/null | python3 "$here/medians.py" "$side" "$round" "$(basename "$exp")" >> "$out/medians.tsv"
    done
  done
done
column -t -s "$(printf '\t')" "$out/summary.tsv"
