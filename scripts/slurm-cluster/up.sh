#!/usr/bin/env bash
# up.sh STATE_DIR: starts a one-node Slurm cluster (munged, slurmctld, slurmd;
# docs/slurm.md) with all of its state under STATE_DIR, and returns once the
# node takes jobs. The node advertises two fake GPUs (gres gpu:fake:2, device
# files under STATE_DIR/dev), so that two jobs asking for one GPU each get
# different CUDA_VISIBLE_DEVICES, and a third waits for Resources.
#
# Writes STATE_DIR/env: source it (SLURM_CONF) to use the cluster's commands.
# Stop it with down.sh STATE_DIR, also after a failed up. Must run as root
# (slurmd starts jobs as their users). One cluster per machine: ports
# 6817 (slurmctld) and 6818 (slurmd) on loopback.
#
#   XRUN_SLURM_UP_TIMEOUT   seconds to wait for the node (default 60)
#   XRUN_SLURM_KILL_WAIT    seconds between a job's SIGTERM and its SIGKILL (default 10)
set -euo pipefail

t0=$SECONDS
say() { printf '[slurm up %3ds] %s\n' "$((SECONDS - t0))" "$*" >&2; }
die() { printf 'slurm-cluster/up.sh: ERROR: %s\n' "$*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: up.sh STATE_DIR"
[ "$(id -u)" = 0 ] || die "must run as root (slurmd starts each job as its user)"
for c in munged slurmctld slurmd sbatch; do
	command -v "$c" >/dev/null || die "$c is not installed: run make setup (Debian's slurm-wlm and munge)"
done
case "$1" in *[[:space:]]*) die "STATE_DIR must not contain whitespace: '$1'" ;; esac
mkdir -p "$1"
S="$(cd "$1" && pwd)"
for p in 6817 6818; do
	if ss -Htln "sport = :$p" | grep -q .; then
		die "port $p is in use: is another cluster running? (down.sh STATE_DIR stops one)"
	fi
done

NODE="$(hostname -s)"
CPUS="$(nproc)"
MEM_MB="$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)"
mkdir -p "$S"/{munge,ctld,spool,log,pids,dev}
chmod 0711 "$S"

# The fake GPUs: device files slurmd can stat (the null device's numbers).
for i in 0 1; do
	[ -e "$S/dev/gpu$i" ] || mknod "$S/dev/gpu$i" c 1 3
done

# munge: a key of its own and a socket under STATE_DIR, so that the
# machine's own munge (if any) is left alone.
if [ ! -s "$S/munge/munge.key" ]; then
	dd if=/dev/urandom of="$S/munge/munge.key" bs=1024 count=1 status=none
fi
chmod 0700 "$S/munge"
chmod 0400 "$S/munge/munge.key"
say "munged"
munged --force --key-file="$S/munge/munge.key" --socket="$S/munge/munge.socket" \
	--pid-file="$S/pids/munged.pid" --log-file="$S/log/munged.log" --seed-file="$S/munge/seed"
chmod 0755 "$S/munge"

cat >"$S/slurm.conf" <<CONF
ClusterName=xrun-test
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=6817
SlurmdPort=6818
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$S/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$S/ctld
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/pids/slurmctld.pid
SlurmdPidFile=$S/pids/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=5
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
GresTypes=gpu
MpiDefault=none
ReturnToService=2
MinJobAge=600
KillWait=${XRUN_SLURM_KILL_WAIT:-10}
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM_MB Gres=gpu:fake:2 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
PartitionName=short Nodes=$NODE MaxTime=00:05:00 State=UP
CONF
cat >"$S/gres.conf" <<CONF
NodeName=$NODE Name=gpu Type=fake File=$S/dev/gpu[0-1]
CONF
cat >"$S/cgroup.conf" <<CONF
CgroupPlugin=cgroup/v1
CgroupAutomount=no
ConstrainCores=no
ConstrainRAMSpace=no
ConstrainDevices=no
CONF
printf 'export SLURM_CONF=%s\n' "$S/slurm.conf" >"$S/env"
export SLURM_CONF="$S/slurm.conf"

say "slurmctld"
slurmctld -c || die "slurmctld did not start: $(tail -5 "$S/log/slurmctld.log" 2>/dev/null)"
say "slurmd"
slurmd || die "slurmd did not start: $(tail -5 "$S/log/slurmd.log" 2>/dev/null)"

timeout="${XRUN_SLURM_UP_TIMEOUT:-60}"
while :; do
	state="$(sinfo -h -n "$NODE" -o %T 2>/dev/null | head -1 || true)"
	case "$state" in
	idle | mixed | allocated) break ;;
	down* | drain* | unk*) scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true ;;
	esac
	if [ $((SECONDS - t0)) -ge "$timeout" ]; then
		die "the node is not up after ${timeout}s (state '${state:-none}'); logs in $S/log"
	fi
	sleep 1
done
say "node $NODE is $state: $CPUS CPUs, 2 fake GPUs, partitions debug (default) and short (5 min); source $S/env"
