#!/usr/bin/env bash
# Submits one experiment attached several times in turn, each with its own
# extra `xrun submit` flags, and keeps what each did:
#   scripts/gpu-host/submit-variants.sh OUTDIR EXPERIMENT LABEL=FLAGS...
# for example
#   scripts/gpu-host/submit-variants.sh OUT experiments/058-projection-chain-backward \
#     cold=--no-cache-volume "cold-noaot=--no-cache-volume --env TORCHINDUCTOR_AUTOGRAD_CACHE=0" warm1= warm2=
# OUTDIR/LABEL gets run-experiments.sh's log, table and summary.tsv, and
# results.json (xrun results --json); OUTDIR/summary.tsv has every submit
# with its label. XRUN names the binary (default: xrun on PATH).
set -uo pipefail
out=$1 exp=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
xrun=${XRUN:-xrun}
mkdir -p "$out"
wrap=$out/.xrun-with-flags
printf 'label\texperiment\tjob\texit\twall_s\tto_first_timing_s\n' > "$out/summary.tsv"
for v in "$@"; do
  label=${v%%=*} flags=${v#*=}
  # run-experiments.sh calls "$XRUN submit DIR": the flags go after submit.
  printf '#!/usr/bin/env bash\nif [ "$1" = submit ]; then shift; exec %q submit %s "$@"; fi\nexec %q "$@"\n' \
    "$xrun" "$flags" "$xrun" > "$wrap"
  chmod +x "$wrap"
  XRUN=$wrap "$here/run-experiments.sh" "$out/$label" attached "$exp" | tail -1 |
    awk -v l="$label" -F'\t' '{ printf "%s\t%s\t%s\t%s\t%s\t%s\n", l, $1, $3, $4, $5, $6 }' >> "$out/summary.tsv"
  job=$(tail -1 "$out/$label/summary.tsv" | cut -f3)
  [ -n "$job" ] && "$xrun" results --json "$job" > "$out/$label/results.json" 2>/dev/null
done
rm -f "$wrap"
if command -v column >/dev/null; then column -t -s "$(printf '\t')" "$out/summary.tsv"; else cat "$out/summary.tsv"; fi
