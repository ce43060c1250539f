#!/usr/bin/env bash
# The results history and CSV at scale: synthetic runs at the spec's case
# cap (spec.MaxCases, 10000 cases) of 10 implementations and the
# reference (110000 timings a run, 170 MB of results.json each, written by
# scripts/scalegen), then the time and peak memory (/usr/bin/time -v: wall
# clock, user CPU, maximum resident set size) of
#
#   - xrun results --csv of one such run, xrun history import of it into an
#     empty history (what a job's finalize does), xrun history (table,
#     --csv, --json) and xrun regress of its job on that history;
#   - xrun history import of RUNS such runs (RUNS x 110000 timings: 10^6
#     and more at the default 10) into an empty history, then xrun history
#     --csv and regress of the last run over all of them.
#
#   scripts/scale-bench.sh OUT_DIR
#
#   XRUN   the xrun binary (default: built into OUT_DIR from this tree)
#   SCALEGEN  the scalegen binary (default: built likewise)
#   RUNS   runs in the large history (default 10)
#   CASES  cases a run (default 10000, the cap)
#   IMPLS  implementations a run besides the reference (default 10)
#
# Needs GNU time at /usr/bin/time and about 2.5 GB in OUT_DIR at the
# defaults. Prints one line per command (seconds, user CPU seconds, MB)
# and writes them to OUT_DIR/figures.tsv. Recorded in docs/performance.md
# ("History and CSV at scale").
set -euo pipefail

out=${1:?usage: scripts/scale-bench.sh OUT_DIR}
runs=${RUNS:-10}
cases=${CASES:-10000}
impls=${IMPLS:-10}
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
xrun=${XRUN:-}
if [[ -z $xrun ]]; then
	xrun=$out/xrun
	(cd "$repo" && CGO_ENABLED=0 go build -o "$xrun" ./cmd/xrun)
fi
scalegen=${SCALEGEN:-}
if [[ -z $scalegen ]]; then
	scalegen=$out/scalegen
	(cd "$repo" && go build -o "$scalegen" ./scripts/scalegen)
fi
[[ -x /usr/bin/time ]] || { echo "scale-bench: needs GNU time at /usr/bin/time" >&2; exit 1; }

if [[ ! -f $out/runs/run-$(printf %02d "$runs")/results.json ]]; then
	echo "writing $runs runs of $cases cases x $((impls + 1)) implementations into $out/runs"
	"$scalegen" -cases "$cases" -impls "$impls" -runs "$runs" -out "$out/runs"
fi
last=$(printf 'scale%04d' "$runs")

printf 'what\twall_s\tuser_s\tmax_rss_mb\n' >"$out/figures.tsv"
# measure NAME XDG_DATA_HOME COMMAND...: runs the command once under GNU
# time, its stdout to OUT_DIR/NAME.out, and records its figures.
measure() {
	local name=$1 data=$2
	shift 2
	local tv=$out/$name.time
	if ! XDG_DATA_HOME=$data /usr/bin/time -v -o "$tv" "$@" >"$out/$name.out" 2>"$out/$name.err"; then
		echo "scale-bench: $name failed:" >&2
		cat "$out/$name.err" >&2
		exit 1
	fi
	local wall user rss
	wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$tv")
	user=$(awk -F': ' '/User time/ {print $2}' "$tv")
	rss=$(awk -F': ' '/Maximum resident set size/ {printf "%d", $2 / 1024}' "$tv")
	printf '%s\t%s\t%s\t%s\n' "$name" "$wall" "$user" "$rss" | tee -a "$out/figures.tsv"
}

one=$out/data-one
all=$out/data-all
rm -rf "$one" "$all"
measure results-csv "$one" "$xrun" results --csv "$out/runs/run-01/results.json"
measure import-one-run "$one" "$xrun" history import "$out/runs/run-01/results.json"
measure history-table "$one" "$xrun" history scale
measure history-csv "$one" "$xrun" history --csv scale
measure history-json "$one" "$xrun" history --json scale
measure regress "$one" "$xrun" regress scale0001
measure "import-$runs-runs" "$all" "$xrun" history import "$out/runs"
measure "history-csv-$runs-runs" "$all" "$xrun" history --csv scale
measure "regress-$runs-runs" "$all" "$xrun" regress "$last"
echo "rows: $(($(wc -l <"$out/history-csv-$runs-runs.out") - 1)) in the large history's CSV"
