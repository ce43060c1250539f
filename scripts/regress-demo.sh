#!/usr/bin/env bash
# The regression rule on a GPU host, through xrun submit: builds a short
# history of a cut-down 058 forward (scripts/regress-demo/experiment: the
# unfused chain as the control, and fused_gemm wrapped so that it can be
# slowed), then slows it by SLOWDOWN (default 0.15, 15 %) of its own median
# GPU time per call, and shows xrun regress finding it: a suspect, confirmed
# by a rerun at once on the same GPU (exit 5, an alert), the control stable.
#
#   scripts/regress-demo.sh OUT_DIR [SUBMIT FLAGS...]
#
#   XRUN       the xrun binary (default bin/xrun; make build)
#   SLOWDOWN   the injected slowdown, a fraction of the median (default 0.15)
#   RUNS       stable runs before it (default 10: the rule judges from 10 on)
#
# On a GPU host set up as docs/gpu-host.md says (Docker, the NVIDIA
# toolkit, the cuda-torch base): 12 jobs of 20-40 s, 5-8 minutes (the
# first job builds the experiment's image). Everything goes
# to OUT_DIR: a job store and history of its own (XDG_DATA_HOME=OUT_DIR/data,
# so the host's are untouched), each job's submit record, regress reports
# (markdown and JSON), the alert, the history as CSV and the trend figures.
# Exit 0 when the slowdown was detected and confirmed and nothing else
# regressed, else 1.
set -uo pipefail

out=${1:?usage: scripts/regress-demo.sh OUT_DIR [SUBMIT FLAGS...]}
shift
flags=("$@")
here=$(cd "$(dirname "$0")" && pwd)
exp="$here/regress-demo/experiment"
xrun=${XRUN:-bin/xrun}
case $xrun in */*) xrun=$(cd "$(dirname "$xrun")" && pwd)/$(basename "$xrun") ;; esac
slowdown=${SLOWDOWN:-0.15}
runs=${RUNS:-10}
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
export XDG_DATA_HOME="$out/data"
export XRUN_HISTORY="$out/data/history.db"
unset DEMO_SLOWDOWN_US
say() { echo "regress-demo: $*" | tee -a "$out/demo.log" >&2; }
start=$(date +%s)

submit() { # NAME: submits the experiment, prints the job id
	local name=$1 t0 id
	t0=$(date +%s)
	"$xrun" submit --queue --json --env DEMO_SLOWDOWN_US "${flags[@]}" "$exp" >"$out/$name.json" 2>"$out/$name.log"
	id=$(jq -r .id "$out/$name.json" 2>/dev/null)
	if [ -z "$id" ] || [ "$id" = null ]; then
		say "$name: submit printed no job (see $out/$name.log)"
		exit 1
	fi
	say "$name: job $id, $(jq -r .status "$out/$name.json"), $(($(date +%s) - t0)) s"
	echo "$id"
}

# status IMPL ID: the rule's verdict on IMPL at T=1024 in job ID.
status() {
	"$xrun" regress --json "$2" 2>/dev/null |
		jq -r --arg i "$1" '.runs[0].points[] | select(.implementation == $i and .case == "T=1024") | .verdict.status'
}

# A history: RUNS stable runs, more while the last is not judged (a run
# that did not converge is noisy and does not count).
export DEMO_SLOWDOWN_US=0
n=0 last=""
while [ "$n" -lt "$runs" ] || { [ "$n" -lt $((runs + 4)) ] && [ "$(status slowed "$last")" != stable ]; }; do
	n=$((n + 1))
	last=$(submit "stable-$n") || exit 1
done
"$xrun" regress --markdown --all "$last" >"$out/regress-stable.md" 2>>"$out/demo.log"
rc=$?
say "the last stable run $last: regress exit $rc, slowed is $(status slowed "$last"), unfused $(status unfused "$last")"

# The slowdown: SLOWDOWN of slowed's median at T=1024 in the history.
median=$("$xrun" history --json --impl slowed --case T=1024 regress-demo | jq '[.[0].points[] | select(.impl_status == "ok") | .median_ms] | sort | .[length/2|floor]')
us=$(awk -v m="$median" -v s="$slowdown" 'BEGIN { printf "%.1f", m * 1000 * s }')
export DEMO_SLOWDOWN_US=$us
say "injecting ${us} us of GPU time per call into slowed ($slowdown of its median ${median} ms at T=1024)"
slow=$(submit slow) || exit 1
"$xrun" regress --markdown --all "$slow" >"$out/regress-slow.md" 2>>"$out/demo.log"
say "the slowed run $slow: regress exit $?, slowed is $(status slowed "$slow"), unfused $(status unfused "$slow")"

# Confirmation by a rerun at once on the same GPU (DEMO_SLOWDOWN_US is
# still set: the rerun repeats the job's --env).
"$xrun" regress --confirm --json --alert "$out/alert.json" --plot "$out/trends" "$slow" >"$out/regress-confirm.json" 2>>"$out/demo.log"
rc=$?
jq -r '.runs[0] | "confirm: rerun \(.rerun // "none"), counts \(.counts)"' "$out/regress-confirm.json" | tee -a "$out/demo.log" >&2
say "regress --confirm exit $rc (5: a confirmed regression)"

{
	"$xrun" history --csv regress-demo >"$out/history.csv"
	"$xrun" history regress-demo >"$out/history.txt"
	"$xrun" history --plot "$out/trends-all" regress-demo >/dev/null
} 2>>"$out/demo.log"
say "done in $(($(date +%s) - start)) s; results in $out"

# The jobs' containers go; their records and results stay in OUT_DIR/data.
# shellcheck disable=SC2046 # one argument per id
"$xrun" rm --keep-record $(jq -r '.id' "$out"/stable-*.json "$out/slow.json") $(jq -r '.runs[0].rerun // empty' "$out/regress-confirm.json") >/dev/null 2>>"$out/demo.log"

regressed=$(jq '[.runs[0].points[] | select(.verdict.status == "regressed")] | map(.implementation + " " + .case) | join(", ")' "$out/regress-confirm.json")
say "regressed: $regressed"
if [ "$rc" -eq 5 ] && jq -e '[.runs[0].points[] | select(.verdict.status == "regressed") | .implementation] | all(. == "slowed") and length > 0' "$out/regress-confirm.json" >/dev/null; then
	say "detected: the slowdown of slowed was confirmed, the control was not flagged"
	exit 0
fi
say "NOT detected as expected (see $out)"
exit 1
