#!/usr/bin/env bash
# Runs one experiment on every host of XRUN_HOSTS and keeps what came back:
# the nightly workflow's step (.github/workflows/nightly.yml, docs/hosts.md).
#
#   scripts/nightly.sh [SUBMIT FLAGS...] EXPERIMENT_DIR OUT_DIR
#
#   XRUN_HOSTS  space-separated hosts (addresses or names from
#               ~/.config/xrun/config.yaml); empty: xrun's default host
#   XRUN        the xrun binary (default bin/xrun)
#
# OUT_DIR gets submit.json (the job records), <id>.md and <id>.json (each
# job's results) and, with two or more jobs, compare.md. A host that fails,
# or a job whose results cannot be read, makes the exit code non-zero; the
# other hosts' results are kept.
set -uo pipefail

if [ $# -lt 2 ]; then
	echo "usage: scripts/nightly.sh [SUBMIT FLAGS...] EXPERIMENT_DIR OUT_DIR" >&2
	exit 2
fi
xrun=${XRUN:-bin/xrun}
args=("$@")
out=${args[-1]}
unset 'args[-1]'
mkdir -p "$out" || exit 1

hosts=()
for h in ${XRUN_HOSTS:-}; do hosts+=(--host "$h"); done

rc=0
# --json prints the job record (one host) or an array of them (fan-out); a
# host that failed is reported on stderr and makes submit's exit non-zero.
"$xrun" submit "${hosts[@]}" --json "${args[@]}" >"$out/submit.json" || rc=$?
ids=$(jq -r 'if type == "array" then .[] else . end | .id' "$out/submit.json") || {
	echo "nightly: submit printed no job records" >&2
	exit 1
}
n=0
for id in $ids; do
	n=$((n + 1))
	"$xrun" results --markdown "$id" >"$out/$id.md" || rc=1
	"$xrun" results --json "$id" >"$out/$id.json" || rc=1
done
if [ "$n" -ge 2 ]; then
	# shellcheck disable=SC2086 # one argument per id
	"$xrun" compare --markdown $ids >"$out/compare.md" || rc=1
fi
echo "nightly: $n job(s), results in $out, exit $rc" >&2
exit "$rc"
