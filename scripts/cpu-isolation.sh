#!/usr/bin/env bash
# A CPU job beside a neighbour that keeps every CPU busy, on the local Docker
# daemon: the measurement behind docs/hosts.md "CPUs of their own". The job
# is client/e2e/testdata/cpus (NumPy's matrix product, a BLAS thread per CPU
# the job may use), the neighbours NEIGHBOURS jobs (default 2) of
# client/e2e/testdata/cpuhog (two spinning processes per CPU for a minute
# each). Docker gives every container an equal share of a busy CPU, so one
# neighbour takes half the CPU time of the CPUs it shares with the job and
# two take two thirds. Each round submits the job four ways:
#   alone            no neighbour, no reservation (every CPU)
#   shared           beside the neighbours, no reservation (every CPU)
#   reserved-alone   no neighbour, resources.cpus: 1
#   reserved         beside the neighbours, resources.cpus: 1 (refused since a
#                    reservation takes no CPU a running job is on: docs/hosts.md)
# and prints the product's median at N = 512, the share of the job's CPUs
# that other processes used (env.host_load: median and largest over the
# timings) and how many CPUs it could use.
#
#   scripts/cpu-isolation.sh OUT_DIR [ROUNDS]
#
#   XRUN  the client (default bin/xrun; make build)
#   BASE  the CPU base image (default xrun/cpu-base:bookworm; make cpu-base)
#   NEIGHBOURS  how many neighbour jobs (default 2)
set -uo pipefail
out=${1:?usage: scripts/cpu-isolation.sh OUT_DIR [ROUNDS]}
rounds=${2:-3}
neighbours=${NEIGHBOURS:-2}
xrun=$(realpath "${XRUN:-bin/xrun}")
base=${BASE:-xrun/cpu-base:bookworm}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(realpath "$out")
export XDG_DATA_HOME=$out/data XRUN_NO_STANDBY=1 XRUN_HOST= XRUN_CONTEXT=

# The job with and without its reservation.
rm -rf "$out/reserved" "$out/shared"
cp -r "$here/client/e2e/testdata/cpus" "$out/reserved"
cp -r "$here/client/e2e/testdata/cpus" "$out/shared"
sed -i 's/, cpus: 1}/}/' "$out/shared/xrun.yaml"
sed -i 's/^name: e2e-cpus$/name: e2e-cpus-shared/' "$out/shared/xrun.yaml"

job() { # label dir -> one line of the table
  local label=$1 dir=$2 id
  id=$("$xrun" submit --cpu --base "$base" -d -q "$dir") || { echo "$label: submit failed" >&2; return 1; }
  "$xrun" wait "$id" > /dev/null
  "$xrun" results --json "$id" > "$out/$label-$id.json"
  python3 - "$label" "$out/$label-$id.json" <<'EOF'
import json, sys
label, path = sys.argv[1], sys.argv[2]
r = json.load(open(path))
med = next(c["results"]["matmul"]["timing"]["median_ms"] for c in r["cases"] if c["params"]["N"] == 512)
hl = r["env"]["host_load"]
print(f"{label}\t{med:.3f}\t{hl['median_others_share']:.2f}\t{hl['max_others_share']:.2f}\t{hl['cpus']}")
EOF
}

printf 'round\trun\tmedian_ms\tothers_median\tothers_max\tcpus\n' | tee "$out/table.tsv"
for r in $(seq 1 "$rounds"); do
  job alone "$out/shared" | sed "s/^/$r\t/" | tee -a "$out/table.tsv"
  job reserved-alone "$out/reserved" | sed "s/^/$r\t/" | tee -a "$out/table.tsv"
  hogs=()
  for _ in $(seq 1 "$neighbours"); do
    hogs+=("$("$xrun" submit --cpu --base "$base" -d -q "$here/client/e2e/testdata/cpuhog")")
  done
  sleep 8 # the neighbours' runners start their spinners
  job shared "$out/shared" | sed "s/^/$r\t/" | tee -a "$out/table.tsv"
  job reserved "$out/reserved" | sed "s/^/$r\t/" | tee -a "$out/table.tsv"
  for hog in "${hogs[@]}"; do
    "$xrun" cancel "$hog" > /dev/null 2>&1
    "$xrun" wait "$hog" > /dev/null 2>&1
  done
done
