#!/usr/bin/env bash
# Runs experiments on every host of XRUN_HOSTS, one experiment after the
# other, and judges each run against its history: the nightly workflow's
# step (.github/workflows/nightly.yml, docs/hosts.md), and the same from
# cron without GitHub.
#
#   scripts/nightly.sh [SUBMIT FLAGS...] EXPERIMENT_DIR... OUT_DIR
#
#   XRUN_HOSTS          space-separated hosts (addresses or names from
#                       ~/.config/xrun/config.yaml); empty: xrun's default host
#   XRUN                the xrun binary (default bin/xrun)
#   XRUN_HISTORY        the results history (default $XDG_DATA_HOME/xrun/history.db)
#   XRUN_ALERT_WEBHOOK  where xrun regress POSTs a confirmed regression's
#                       alert (bearer XRUN_ALERT_TOKEN); optional
#
# Each experiment runs on every host at once (fan-out: one job per host)
# and waits for busy GPUs (--queue), so experiments never share a GPU.
# For each job, OUT_DIR/<experiment>/ gets <id>.md (the report, its figures
# in <id>/), <id>.outcome (the outcome against the declared one),
# <id>.json (results.json), regress-<id>.md (the judgement against the
# history; a suspect is rerun at once on the same GPUs, and its trend drawn
# in <id>/trends/), and, with two or more hosts, compare.md. A confirmed regression's alert goes to OUT_DIR/alerts/<id>.json.
# OUT_DIR/summary.md gathers the regression tables (the workflow's job summary).
#
# Exit code: 0 when every run came out as its experiment declares and
# nothing regressed; 5 a confirmed regression; 4 infrastructure (a host
# that ran no job, unreadable results, a failed rerun or history); else
# the code of the worst outcome that is worse than declared (1 a criterion
# declared to pass failed, 2 an implementation failed, 124 timed out).
set -uo pipefail

if [ $# -lt 2 ]; then
	echo "usage: scripts/nightly.sh [SUBMIT FLAGS...] EXPERIMENT_DIR... OUT_DIR" >&2
	exit 2
fi
xrun=${XRUN:-bin/xrun}
case $xrun in */*) xrun=$(cd "$(dirname "$xrun")" && pwd)/$(basename "$xrun") ;; esac
args=("$@")
out=${args[-1]}
unset 'args[-1]'
# The experiment directories are the trailing arguments that hold an
# xrun.yaml; what comes before them are submit flags.
exps=()
while [ ${#args[@]} -gt 0 ] && [ -f "${args[-1]}/xrun.yaml" ]; do
	exps=("$(cd "${args[-1]}" && pwd)" "${exps[@]}")
	unset 'args[-1]'
done
flags=("${args[@]}")
if [ ${#exps[@]} -eq 0 ]; then
	echo "nightly: no experiment directory (one with an xrun.yaml) before OUT_DIR" >&2
	exit 2
fi
mkdir -p "$out" || exit 4
out=$(cd "$out" && pwd)

hosts=()
for h in ${XRUN_HOSTS:-}; do hosts+=(--host "$h"); done
want=$((${#hosts[@]} / 2))
[ "$want" -ge 1 ] || want=1

regressed=0 infra=0 worse=0
note() { echo "nightly: $*" >&2; }
# worst keeps the outcome code to exit with: any other over 1 (the
# criteria failed), else the first.
worst() { if [ "$worse" = 0 ] || [ "$worse" = 1 ]; then worse=$1; fi; }

summary="$out/summary.md"
{
	echo "# Nightly: $(date -u +'%Y-%m-%d %H:%M UTC')"
	echo
} >"$summary"

for exp in "${exps[@]}"; do
	name=$(basename "$exp")
	d="$out/$name"
	mkdir -p "$d"
	note "$name: submitting on ${XRUN_HOSTS:-the default host}"
	# --json prints the job record (one host) or an array of them
	# (fan-out); a job's own exit code (criteria failed) is not the
	# nightly's verdict: its outcome against the declared one is.
	"$xrun" submit "${hosts[@]}" --queue --json "${flags[@]}" "$exp" >"$d/submit.json"
	rc=$?
	ids=$(jq -r 'if type == "array" then .[] else . end | select(.container_id != null and .container_id != "") | .id' "$d/submit.json" 2>/dev/null)
	n=$(echo "$ids" | grep -c . || true)
	if [ "$n" -lt "$want" ]; then
		note "$name: $n of $want host(s) ran a job (submit exit $rc)"
		infra=1
		echo "**$name**: $n of $want host(s) ran a job (submit exit $rc); see the log." >>"$summary"
		echo >>"$summary"
	fi
	for id in $ids; do
		# The report and its figures, linked relative to the report.
		(cd "$d" && "$xrun" results --markdown --expected --plot "$id" "$id" >"$id.md" 2>"$id.outcome")
		rc=$?
		cat "$d/$id.outcome" >&2
		case $rc in
		0) ;;
		3 | 4) infra=1 ;;
		*) worst "$rc" ;;
		esac
		"$xrun" results --json "$id" >"$d/$id.json" 2>/dev/null
		rc=$?
		[ "$rc" -le 2 ] || [ "$rc" -eq 124 ] || [ "$rc" -eq 130 ] || infra=1
		# Judged against the history; suspects rerun at once.
		(cd "$d" && "$xrun" regress --confirm --markdown --plot "$id/trends" --alert "$out/alerts/$id.json" "$id" >"regress-$id.md")
		rc=$?
		case $rc in
		0) ;;
		5) regressed=1 ;;
		*) infra=1 ;;
		esac
		# Links in the summary are relative to OUT_DIR.
		sed "s#](\($id/\)#]($name/\1#g" "$d/regress-$id.md" >>"$summary"
		echo >>"$summary"
	done
	if [ "$n" -ge 2 ]; then
		# shellcheck disable=SC2086 # one argument per id
		"$xrun" compare --markdown $ids >"$d/compare.md" || infra=1
	fi
done

code=0
if [ "$regressed" = 1 ]; then
	code=5
elif [ "$infra" = 1 ]; then
	code=4
elif [ "$worse" != 0 ]; then
	code=$worse
fi
note "${#exps[@]} experiment(s), results in $out, exit $code"
exit "$code"
