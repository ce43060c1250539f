#!/usr/bin/env bash
# Does the `xrun init` scaffold converge on a busy CPU host? Makes the
# scaffold, then runs it with `xrun run --local --cpu` as written and as it
# was before (max_time_s 2, the GPU's K and N on the CPU), at each number
# of competing CPU hogs (`yes > /dev/null`, started and stopped here), and
# prints one line per timing: the variant, the hogs, the load average, the
# implementation, the case, converged or not, the relative standard error
# (the target is 0.5 %) and the samples.
#
#   scripts/scaffold-convergence.sh OUT_DIR
#
#   XRUN      the xrun binary (default bin/xrun; make build)
#   HOGS      the numbers of hogs to try (default "0 2 4")
#   VARIANTS  the variants to run (default "as-written before")
set -uo pipefail

out=${1:?usage: scripts/scaffold-convergence.sh OUT_DIR}
xrun=${XRUN:-bin/xrun}
case $xrun in */*) xrun=$(cd "$(dirname "$xrun")" && pwd)/$(basename "$xrun") ;; esac
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
export XDG_DATA_HOME="$out/data"
hogs=()
stop_hogs() {
	[ ${#hogs[@]} -gt 0 ] || return 0
	kill "${hogs[@]}" 2>/dev/null
	wait "${hogs[@]}" 2>/dev/null
	hogs=()
}
trap stop_hogs EXIT

exp="$out/scaffold"
rm -rf "$exp"
"$xrun" init "$exp" >/dev/null || exit 1
cp "$exp/xrun.yaml" "$out/xrun.yaml.scaffold"
# variant NAME: the scaffold's xrun.yaml as that variant has it.
variant() {
	case $1 in
	as-written) cat "$out/xrun.yaml.scaffold" ;;
	before) sed -e '/^  cpu_params:/d' -e 's/^    max_time_s: [0-9]*/    max_time_s: 2/' "$out/xrun.yaml.scaffold" ;;
	*) echo "unknown variant $1" >&2 && return 1 ;;
	esac
}
printf 'variant\thogs\tload\timpl\tcase\tconverged\trse\tsamples\tmedian_ms\twall_s\n'
n=0
for v in ${VARIANTS:-as-written before}; do
	for h in ${HOGS:-0 2 4}; do
		n=$((n + 1))
		variant "$v" >"$exp/xrun.yaml" || exit 1
		for _ in $(seq "$h"); do
			yes >/dev/null &
			hogs+=($!)
		done
		sleep 2
		load=$(cut -d' ' -f1 /proc/loadavg)
		t0=$(date +%s)
		"$xrun" run --local --cpu --out "$out/run-$n" "$exp" >"$out/run-$n.log" 2>&1
		wall=$(($(date +%s) - t0))
		stop_hogs
		jq -r --arg v "$v" --arg h "$h" --arg l "$load" --arg w "$wall" '.cases[] | .label as $c | .results | to_entries[] | select(.value.timing) |
			[$v, $h, $l, .key, $c, .value.timing.converged, "\(100 * .value.timing.stderr_rel | . * 100 | round / 100) %",
			 .value.timing.samples, .value.timing.median_ms, $w] | @tsv' "$out/run-$n/results.json"
	done
done
