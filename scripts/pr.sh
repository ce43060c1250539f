#!/usr/bin/env bash
# Runs the experiments a pull request touches and judges each run against
# main's results history, without adding the pull request's runs to it:
# the pull-request workflow's step (.github/workflows/pr.yml,
# docs/regressions.md "Pull requests").
#
#   scripts/pr.sh [SUBMIT FLAGS...] BASE OUT_DIR
#   scripts/pr.sh --list BASE           the experiment directories it would run
#
#   BASE     the commit or branch the pull request merges into (origin/main)
#   XRUN     the xrun binary (default bin/xrun)
#   XRUN_HISTORY  main's results history (default $XDG_DATA_HOME/xrun/history.db)
#
# An experiment is touched when a file under experiments/NAME/ changed, or a
# file under a path its xrun.yaml includes (include: [../../kernels/gla]).
# The runs are judged against a copy of main's history (OUT_DIR/history.db)
# and recorded in a job store of their own (OUT_DIR/data), so a pull
# request never moves main's baselines; its jobs compile without main's
# compile-cache volume (--no-cache-volume), so it never writes into it. OUT_DIR/comment.md gets
# one markdown table per experiment (the workflow comments it on the pull
# request), and each job's report and judgement stay in OUT_DIR/NAME/.
#
# Exit code: 0 when nothing regressed and every run came out as its
# experiment declares; 5 a regression suspected against main (one run of a
# pull request cannot be confirmed: the comment says so); 4 infrastructure;
# else the worst outcome's code (1 criteria, 2 failed, 124 timed out).
set -uo pipefail

list=0
if [ "${1:-}" = "--list" ]; then
	list=1
	shift
fi
if { [ $list = 1 ] && [ $# -ne 1 ]; } || { [ $list = 0 ] && [ $# -lt 2 ]; }; then
	echo "usage: scripts/pr.sh [SUBMIT FLAGS...] BASE OUT_DIR, or scripts/pr.sh --list BASE" >&2
	exit 2
fi
flags=("$@")
if [ $list = 1 ]; then
	base=$1
	flags=()
else
	n=${#flags[@]}
	out=${flags[n-1]}
	base=${flags[n-2]}
	flags=("${flags[@]:0:n-2}")
fi

changed=$(git diff --name-only "$base"...HEAD) || { echo "pr: cannot diff against $base (fetch it: actions/checkout with fetch-depth: 0)" >&2; exit 4; }

# under PATH: whether a changed file is PATH or lies under it (compared as
# text: a directory name may hold spaces and regular-expression signs).
under() {
	local f
	while IFS= read -r f; do
		[[ $f == "$1" || $f == "$1/"* ]] && return 0
	done <<<"$changed"
	return 1
}

# touched lists the experiment directories whose files, or included paths,
# changed, one a line.
touched() {
	local spec dir inc path
	for spec in experiments/*/xrun.yaml; do
		[ -f "$spec" ] || continue
		dir=$(dirname "$spec")
		if under "$dir"; then
			echo "$dir"
			continue
		fi
		# include: [a, b] or a list of "- a" lines, relative to the experiment.
		while IFS= read -r inc; do
			inc=${inc//[\"\']/}
			inc=${inc#"${inc%%[![:space:]]*}"}
			inc=${inc%"${inc##*[![:space:]]}"}
			[ -n "$inc" ] || continue
			path=$(realpath -m --relative-to=. "$dir/$inc")
			if under "$path"; then
				echo "$dir"
				break
			fi
		done < <(sed -n 's/^include:[[:space:]]*\[\(.*\)\].*/\1/p' "$spec" | tr ',' '\n'
			sed -n '/^include:[[:space:]]*$/,/^[^[:space:]-]/s/^[[:space:]]*-[[:space:]]*//p' "$spec")
	done
}

mapfile -t exps < <(touched)
if [ $list = 1 ]; then
	[ ${#exps[@]} -gt 0 ] && printf '%s\n' "${exps[@]}"
	exit 0
fi

xrun=${XRUN:-bin/xrun}
case $xrun in */*) xrun=$(cd "$(dirname "$xrun")" && pwd)/$(basename "$xrun") ;; esac
mkdir -p "$out"
out=$(cd "$out" && pwd)
comment=$out/comment.md
{
	echo "## xrun: the experiments this pull request touches, against main's history"
	echo
} >"$comment"
if [ ${#exps[@]} -eq 0 ]; then
	echo "No experiment is touched (no file under experiments/NAME/ or under what an experiment includes changed)." >>"$comment"
	echo "pr: no experiment is touched" >&2
	exit 0
fi

# A copy of main's history: the pull request's runs join it, main's does
# not. They are also kept out of main's job store (the nightly's history
# imports the finished jobs of its store): the pull request has its own,
# under OUT_DIR.
if [ -n "${XRUN_HISTORY:-}" ]; then export XRUN_HISTORY; fi
if ! "$xrun" history backup "$out/history.db" 2>"$out/history-backup.log"; then
	echo "pr: main's results history could not be copied ($(tail -n 1 "$out/history-backup.log")): the runs are judged against none" >&2
	echo "_main's results history could not be read: the runs below are judged against none._" >>"$comment"
	echo >>"$comment"
fi
export XRUN_HISTORY=$out/history.db XDG_DATA_HOME=$out/data

rc=0 regressed=0 infra=0
for exp in "${exps[@]}"; do
	name=$(basename "$exp")
	d=$out/$name
	mkdir -p "$d"
	echo "pr: $name: submitting" >&2
	# The pull request's code compiles in caches of its own, which go with
	# its container: it cannot plant kernels in the compile-cache volume
	# that main's nightly jobs of the experiment load.
	"$xrun" submit --json --no-cache-volume "${flags[@]}" "$exp" >"$d/submit.json"
	src=$?
	id=$(jq -r 'if type == "array" then .[0] else . end | .id // empty' "$d/submit.json" 2>/dev/null)
	if [ -z "$id" ]; then
		echo "**$name**: the run did not start (submit exit $src); see the workflow's log." >>"$comment"
		infra=1
		continue
	fi
	"$xrun" results --markdown "$id" >"$d/$id.md" 2>/dev/null
	"$xrun" regress --markdown "$id" >"$d/regress-$id.md"
	case $? in
	0) ;;
	5) regressed=1 ;;
	*) infra=1 ;;
	esac
	{
		echo "### $name (job $id)"
		echo
		cat "$d/regress-$id.md"
		echo
	} >>"$comment"
	outcome=0
	"$xrun" results --expected "$id" >/dev/null 2>&1 || outcome=$?
	[ "$outcome" -gt "$rc" ] && [ "$outcome" != 5 ] && rc=$outcome
done
if [ $regressed = 1 ]; then
	echo "A **regressed** row is a suspect: one run of a pull request is not confirmed. Push again (or rerun the workflow) to see whether it holds." >>"$comment"
	exit 5
fi
[ $infra = 1 ] && exit 4
exit "$rc"
