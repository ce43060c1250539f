#!/usr/bin/env bash
# Times xrun submit against a hand-written `docker build` + `docker run` of
# the same context on the same daemon, with hyperfine:
#
#   1. warm resubmit after a one-line code edit, until the container runs
#      (xrun submit -d vs docker build + docker run -d);
#   2. unchanged resubmit, until the container runs (xrun skips the build;
#      docker run -d of the existing image is the floor);
#   3. what a code-only edit builds (nothing: xrun copies the code into the
#      job's container; the submit's output says so).
#
# Usage: client/e2e/bench/bench-submit.sh [RUNS]
# XRUN_BENCH_BIN=path times that xrun binary instead of building one.
# Needs: docker, hyperfine (apt-get install hyperfine), the CPU base
# xrun/cpu-base:bookworm (sudo images/make-cpu-base.sh). Everything it makes
# carries the label xrun.bench=1 and is removed at the end.
set -euo pipefail
runs="${1:-10}"
base="${XRUN_BENCH_BASE:-xrun/cpu-base:bookworm}"
repo="$(cd "$(dirname "$0")/../../.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/xrun-bench.XXXXXX")"
export XDG_DATA_HOME="$work/data"

cleanup() {
	ids="$(docker ps -aq --filter label=xrun.bench=1)"
	[ -z "$ids" ] || docker rm -f $ids >/dev/null
	imgs="$(docker images -q --filter label=xrun.bench=1 | sort -u)"
	[ -z "$imgs" ] || docker rmi -f $imgs >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

command -v hyperfine >/dev/null || { echo "bench-submit.sh: needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }
docker image inspect "$base" >/dev/null 2>&1 || { echo "bench-submit.sh: $base is missing: sudo images/make-cpu-base.sh" >&2; exit 1; }

xrun="$work/xrun"
if [ -n "${XRUN_BENCH_BIN:-}" ]; then
	cp "$XRUN_BENCH_BIN" "$xrun"
else
	echo "building xrun" >&2
	(cd "$repo" && CGO_ENABLED=0 go build -trimpath -o "$xrun" ./cmd/xrun)
fi

# One context for both: ctx/exp is the experiment xrun submits; ctx holds
# the same runner binary and a Dockerfile with the layers xrun generates.
ctx="$work/ctx"
mkdir -p "$ctx"
cp -r "$repo/client/e2e/testdata/quick" "$ctx/exp"
sed -i 's/^name: e2e-quick/name: bench-quick/' "$ctx/exp/xrun.yaml"
cp "$xrun" "$ctx/xrun-runner"
cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $base
ENV PYTHONUNBUFFERED=1
COPY xrun-runner /usr/local/bin/xrun-runner
WORKDIR /xrun/out
WORKDIR /xrun/exp
ENTRYPOINT ["/usr/local/bin/xrun-runner", "--experiment", "/xrun/exp", "--out", "/xrun/out"]
LABEL xrun.bench=1
COPY exp/ /xrun/exp/
DOCKERFILE

edit="echo \"# edit \$(date +%s%N)\" >> $ctx/exp/vecadd.py"
rmjobs="ids=\$(docker ps -aq --filter label=xrun.bench=1); [ -z \"\$ids\" ] || docker rm -f \$ids >/dev/null"
submit="$xrun submit -d --cpu --base $base --label xrun.bench=1 $ctx/exp"
hand="docker build -q -t bench/hand:latest $ctx >/dev/null && docker run -d --label xrun.bench=1 -e XRUN_MODE=cpu --shm-size 1g bench/hand:latest >/dev/null"

# Warm both caches: the base layers, the runner layer.
eval "$edit"; $submit >/dev/null 2>&1; eval "$hand"; eval "$rmjobs"

# hyperfine times one command's runs, then the other's: on a machine whose
# load drifts, the order biases the result, so run both orders.
echo "== 1. one-line code edit, then submit until running" >&2
hyperfine --runs "$runs" --warmup 1 --export-markdown "$work/edit.md" \
	--prepare "$rmjobs; $edit" \
	-n "xrun submit -d (edit)" "$submit" \
	-n "docker build + docker run -d (edit)" "$hand"
hyperfine --runs "$runs" --export-markdown "$work/edit-reversed.md" \
	--prepare "$rmjobs; $edit" \
	-n "docker build + docker run -d (edit, run first)" "$hand" \
	-n "xrun submit -d (edit, run second)" "$submit"

echo "== 2. unchanged resubmit until running" >&2
eval "$rmjobs"; $submit >/dev/null 2>&1; eval "$hand"
hyperfine --runs "$runs" --warmup 1 --export-markdown "$work/same.md" \
	--prepare "$rmjobs" \
	-n "xrun submit -d (unchanged)" "$submit" \
	-n "docker run -d (existing image)" "docker run -d --label xrun.bench=1 -e XRUN_MODE=cpu --shm-size 1g bench/hand:latest"

echo "== 3. what a code-only edit builds" >&2
eval "$rmjobs; $edit"
$submit 2>&1 >/dev/null | grep -E '^(Step [0-9]+/[0-9]+|building|image .* build skipped)' || true

echo "== step timings of an unchanged submit (XRUN_TRACE=1)" >&2
eval "$rmjobs"
XRUN_TRACE=1 $submit 2>&1 >/dev/null | grep '^trace:'

cat "$work/edit.md" "$work/edit-reversed.md" "$work/same.md"
