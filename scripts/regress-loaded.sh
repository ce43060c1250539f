#!/usr/bin/env bash
# The relative rule on a busy CPU host, through xrun run --local --cpu (no
# Docker): nightly runs of scripts/regress-demo/loaded (a steady control,
# the run's baseline; a candidate; the reference, the control's own code),
# each under a different number of competing CPU hogs (`yes > /dev/null`,
# started before the run and stopped after it, on top of whatever else the
# machine runs), each judged by xrun regress as a nightly would judge it.
# The last nights slow the candidate by SLOWDOWN (DEMO_SLOWDOWN: that
# fraction of its work again).
#
#   scripts/regress-loaded.sh OUT_DIR
#
#   XRUN      the xrun binary (default bin/xrun; make build)
#   PYTHON    a python3 with numpy (default: the one xrun picks)
#   HISTORY   hogs of each night that builds the history (the rule judges
#             from the 11th run on; default "0 1 2 3 4 0 2 4 1 3")
#   JUDGED    hogs of each judged night (default "6 0 3 1 5 2 6 0 4 2")
#   SLOWED    hogs of each night with the candidate slowed (default "5 2")
#   SLOWDOWN  the candidate's slowdown on those nights (default 0.2)
#   PIN       a CPU to run the nights on (taskset -c PIN): every worker on
#             the same core, while the hogs run anywhere (default: none)
#
# Everything goes to OUT_DIR: a job store and history of its own
# (XDG_DATA_HOME=OUT_DIR/data), each night's results.json, log and regress
# report (JSON), nights.tsv (one line per night), the history as text and
# CSV, and the last night's markdown report. Exit 0 when no night
# confirmed a regression of the control or the reference and the
# candidate's slowdown was confirmed (regress exit 5), else 1.
set -uo pipefail

out=${1:?usage: scripts/regress-loaded.sh OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
exp="$here/regress-demo/loaded"
xrun=${XRUN:-bin/xrun}
case $xrun in */*) xrun=$(cd "$(dirname "$xrun")" && pwd)/$(basename "$xrun") ;; esac
mkdir -p "$out/nights" || exit 1
out=$(cd "$out" && pwd)
export XDG_DATA_HOME="$out/data"
export XRUN_HISTORY="$out/data/history.db"
py=()
[ -n "${PYTHON:-}" ] && py=(--python "$PYTHON")
pin=()
[ -n "${PIN:-}" ] && pin=(taskset -c "$PIN")
say() { echo "regress-loaded: $*" | tee -a "$out/loaded.log" >&2; }
hogs=()
stop_hogs() {
	[ ${#hogs[@]} -gt 0 ] || return 0
	kill "${hogs[@]}" 2>/dev/null
	wait "${hogs[@]}" 2>/dev/null
	hogs=()
}
trap stop_hogs EXIT
start=$(date +%s)

n=0 control_regressed=0 candidate_confirmed=0
printf 'night\tphase\thogs\tload\tcontrol_ms\tcandidate_ms\treference_ms\thost_factor\tcontrol\tcandidate\treference\ttime_alone\tregress_exit\n' >"$out/nights.tsv"
# night PHASE HOGS SLOWDOWN: one nightly run and its judgement.
night() {
	local phase=$1 h=$2 slow=$3 id rc load
	n=$((n + 1))
	local name
	name=$(printf 'night-%02d' "$n")
	for _ in $(seq "$h"); do
		yes >/dev/null &
		hogs+=($!)
	done
	sleep 3 # the hogs take their share before the run starts
	load=$(cut -d' ' -f1 /proc/loadavg)
	DEMO_SLOWDOWN=$slow "${pin[@]}" "$xrun" run --local --cpu "${py[@]}" --out "$out/nights/$name" "$exp" >"$out/nights/$name.log" 2>&1
	stop_hogs
	id=$(jq -r .job_id "$out/nights/$name/results.json" 2>/dev/null)
	if [ -z "$id" ] || [ "$id" = null ]; then
		say "$name: the run wrote no results (see $out/nights/$name.log)"
		exit 1
	fi
	"$xrun" regress --json "$id" >"$out/nights/$name-regress.json" 2>>"$out/loaded.log"
	rc=$?
	# One line: each implementation's median and verdict (what it was
	# judged on), and how often the time alone breached the rule's bounds.
	jq -r --arg n "$n" --arg p "$phase" --arg h "$h" --arg l "$load" --arg rc "$rc" '
		def pts: .runs[0].points;
		def pt($i): pts[] | select(.implementation == $i);
		def verdict($i): pt($i) | .verdict |
			.status + (if .relative.median then " (\(.relative.of | sub("time / host factor"; "time/host") | sub("ratio to "; "÷")) \(100 * .relative.change | . * 10 | round / 10 | if . >= 0 then "+\(.)" else "\(.)" end)%)" else "" end);
		def breached: [pts[] | .verdict | select(.median_ms and ((.score > 4 and .change > 0.05) or (.score < -4 and .change < -0.05)))] | length;
		[$n, $p, $h, $l, (pt("control").median_ms), (pt("candidate").median_ms), (pt("reference").median_ms),
		 (pt("control").verdict.host_factor // "-"), verdict("control"), verdict("candidate"), verdict("reference"),
		 "\(breached) of \(pts | length)", $rc] | @tsv' "$out/nights/$name-regress.json" >>"$out/nights.tsv"
	local st
	st=$(jq -r '[.runs[0].points[] | "\(.implementation) \(.verdict.status)"] | join(", ")' "$out/nights/$name-regress.json")
	say "$name ($phase, $h hogs, load $load): job $id, regress exit $rc: $st"
	if jq -e '[.runs[0].points[] | select(.implementation != "candidate" and .verdict.status == "regressed")] | length > 0' \
		"$out/nights/$name-regress.json" >/dev/null; then
		control_regressed=$((control_regressed + 1))
	fi
	if [ "$phase" = slowed ] && [ "$rc" -eq 5 ] && jq -e '[.runs[0].points[] | select(.implementation == "candidate" and .verdict.status == "regressed")] | length > 0' \
		"$out/nights/$name-regress.json" >/dev/null; then
		candidate_confirmed=1
	fi
}

for h in ${HISTORY:-0 1 2 3 4 0 2 4 1 3}; do night history "$h" 0; done
for h in ${JUDGED:-6 0 3 1 5 2 6 0 4 2}; do night judged "$h" 0; done
for h in ${SLOWED:-5 2}; do night slowed "$h" "${SLOWDOWN:-0.2}"; done

{
	"$xrun" history regress-loaded >"$out/history.txt"
	"$xrun" history --csv regress-loaded >"$out/history.csv"
	"$xrun" regress --markdown --all "$(jq -r .runs[0].job_id "$out/nights/$(printf 'night-%02d' "$n")-regress.json")" >"$out/regress-last.md"
} 2>>"$out/loaded.log"
column -t -s $'\t' "$out/nights.tsv" >&2
say "done in $(($(date +%s) - start)) s: $control_regressed night(s) with the control or the reference regressed; candidate's slowdown confirmed: $candidate_confirmed"
[ "$control_regressed" -eq 0 ] && [ "$candidate_confirmed" -eq 1 ]
