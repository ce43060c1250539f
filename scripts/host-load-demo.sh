#!/usr/bin/env bash
# A CPU timing beside competing processes: the measurement behind the
# host_busy threshold (docs/regressions.md, "Noisy values"). It times one
# case of the `xrun init` scaffold (numpy's 64x512 @ 512x512) with the bare
# runner, alone and beside competitors that take a known share of the CPUs,
# and prints each timing's median, quartiles, the share of the CPUs that
# other processes used (timing.host_load.others_share) and whether it got a
# host_busy warning.
#
#   scripts/host-load-demo.sh OUT_DIR
#
#   XRUN_RUNNER  the runner binary (default bin/xrun-runner; make build)
#   XRUN         the client, for `xrun init` (default bin/xrun)
#   PYTHON       a python3 with numpy (default python3)
#
# Each run is a session of its own, and so is each competitor: where the
# kernel groups processes by session (sched_autogroup, the default on
# desktops and many VMs), CPU time is shared between sessions first, and
# three `yes` started from one shell take one session's share. As root the
# runner's session and the competitors' get autogroup nice -20, so that the
# machine's other sessions only fill their idle time: the competitors are
# then the only contention at the runner's priority. Linux only; about
# 20 s a run, 5 runs.
set -uo pipefail

out=${1:?usage: scripts/host-load-demo.sh OUT_DIR}
runner=${XRUN_RUNNER:-bin/xrun-runner}
xrun=${XRUN:-bin/xrun}
python=${PYTHON:-python3}
mkdir -p "$out"
exp="$out/experiment"
if [ ! -f "$exp/xrun.yaml" ]; then
	"$xrun" init --name host-load "$exp" >/dev/null || exit 1
	sed -i 's/cpu_sweep: {M: \[32, 64\]}/cpu_sweep: {M: [64]}/' "$exp/xrun.yaml"
fi
nice=0
[ "$(id -u)" = 0 ] && nice=-20

# competitor BUSY_S SLEEP_S: a loop in a session of its own, busy BUSY_S
# then asleep SLEEP_S; its pid in $!.
competitor() {
	setsid bash -c "echo $nice >/proc/self/autogroup 2>/dev/null; exec $python -c '
import time
while True:
    t = time.perf_counter()
    while time.perf_counter() - t < $1: pass
    if $2 > 0: time.sleep($2)'" &
}

i=0
for cond in alone duty yes1 yes3 alone; do
	i=$((i + 1))
	pids=()
	case $cond in
	duty) competitor 0.010 0.010; pids+=($!) ;;       # half of one CPU
	yes1) competitor 1 0; pids+=($!) ;;                # one CPU
	yes3) for _ in 1 2 3; do competitor 1 0; pids+=($!); done ;;
	esac
	sleep 1
	dir="$out/run$i-$cond"
	setsid bash -c "echo $nice >/proc/self/autogroup 2>/dev/null; exec $runner --mode cpu --python $python \
		--experiment $exp --out $dir" >"$dir.log" 2>&1
	[ ${#pids[@]} -gt 0 ] && kill "${pids[@]}"
	wait 2>/dev/null
	"$python" - "$dir/results.json" "$cond" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
busy = {w.get("implementation") for w in r["warnings"] if w["kind"] == "host_busy"}
for c in r["cases"]:
    for name, ir in sorted(c["results"].items()):
        t = ir.get("timing") or {}
        h = t.get("host_load") or {}
        print(f"{sys.argv[2]:6s} {name:10s} median {t.get('median_ms', 0):7.2f} ms  q1-q3 {t.get('q1_ms', 0):6.2f}-{t.get('q3_ms', 0):6.2f}"
              f"  others {h.get('others_share', '-')}  job {h.get('job_share', '-')}  load {h.get('max_load1', '-')}"
              f"  {'host_busy' if name in busy else ''}")
EOF
done
