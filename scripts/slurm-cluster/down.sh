#!/usr/bin/env bash
# down.sh STATE_DIR: stops the cluster up.sh STATE_DIR started (its jobs too)
# and leaves its state and logs there.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: down.sh STATE_DIR" >&2; exit 1; }
S="$(cd "$1" 2>/dev/null && pwd)" || exit 0
if [ -f "$S/slurm.conf" ]; then
	SLURM_CONF="$S/slurm.conf" scancel --full --signal=KILL --user="$(id -un)" >/dev/null 2>&1 || true
fi
for d in slurmd slurmctld munged; do
	f="$S/pids/$d.pid"
	pid="$(cat "$f" 2>/dev/null)" || continue
	[ -n "$pid" ] || continue
	# Only a process whose command is the daemon it should be.
	if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$d" ]; then
		kill "$pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null
	fi
	rm -f "$f"
	echo "down.sh: stopped $d (pid $pid)"
done
echo "down.sh: the cluster of $S is down; its state and logs stay there"
exit 0
