#!/usr/bin/env bash
# Submits experiments through xrun to a GPU Docker host and keeps what each
# did, the way the results under experiments/*/results/*-xrun-submit/ were made:
#   scripts/gpu-host/run-experiments.sh OUTDIR attached|detached EXPERIMENT...
# attached: `xrun submit DIR`; detached: `xrun submit -d DIR`, then
# `xrun logs -f`, `xrun wait` and `xrun results --markdown`.
# OUTDIR gets, per experiment, NAME.log (the client's stderr, each line
# prefixed with the epoch time it was read), NAME.md (the results table) and
# a line in summary.tsv: name, mode, job id, exit code, seconds from the
# submit to the end and to the runner's first timed batch.
# The host is xrun's usual choice (--host, DOCKER_HOST, ...); XRUN names the
# binary (default: xrun on PATH).
set -uo pipefail
out=$1 mode=$2
shift 2
case "$mode" in attached|detached) ;; *) echo "mode is attached or detached, not $mode" >&2; exit 2;; esac
xrun=${XRUN:-xrun}
mkdir -p "$out"
[ -f "$out/summary.tsv" ] || printf 'experiment\tmode\tjob\texit\twall_s\tto_first_timing_s\n' > "$out/summary.tsv"

stamp() { while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done; }

for exp in "$@"; do
  name=$(basename "$exp")
  log=$out/$name.log
  t0=$EPOCHREALTIME
  echo "$t0 submit $mode $exp" > "$log"
  if [ "$mode" = attached ]; then
    "$xrun" submit "$exp" 2>&1 >"$out/$name.table" | stamp >> "$log"
    rc=${PIPESTATUS[0]}
    id=$(sed -n 's/.* job \([0-9a-z]*\) running in container .*/\1/p' "$log" | head -1)
  else
    id=$("$xrun" submit -d "$exp" 2> >(stamp >> "$log"))
    rc=$?
    if [ "$rc" = 0 ]; then
      "$xrun" logs -f "$id" 2>&1 | stamp >> "$log"
      "$xrun" wait "$id" >> "$log" 2>&1
      rc=$?
    fi
  fi
  t1=$EPOCHREALTIME
  [ -n "$id" ] && "$xrun" results --markdown "$id" > "$out/$name.md" 2>>"$log"
  first=$(awk '/timing: first batch/ {print $1; exit}' "$log")
  awk -v n="$name" -v m="$mode" -v id="$id" -v rc="$rc" -v t0="$t0" -v t1="$t1" -v f="${first:-}" \
    'BEGIN { printf "%s\t%s\t%s\t%s\t%.1f\t%s\n", n, m, id, rc, t1 - t0, (f == "" ? "-" : sprintf("%.1f", f - t0)) }' \
    | tee -a "$out/summary.tsv"
done
