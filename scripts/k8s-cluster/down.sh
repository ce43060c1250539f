#!/usr/bin/env bash
# down.sh STATE_DIR: stops the cluster that up.sh started in STATE_DIR and undoes
# what it did to the machine: its processes, the pods' containers and shims, the
# mounts under STATE_DIR, the CNI bridge and veths, the kubelet's cgroups,
# iptables chains and /var/log/containers links, and the sysctls it changed.
# Safe to run twice, and after a failed or partial up. Leaves STATE_DIR's files
# (logs/ among them) for the caller to read or remove.
set -uo pipefail

t0=$SECONDS
say() { printf '[down %4ds] %s\n' "$((SECONDS - t0))" "$*" >&2; }
[ $# -eq 1 ] || { echo "usage: down.sh STATE_DIR" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "down.sh: must run as root" >&2; exit 1; }
if [ ! -d "$1" ]; then say "no $1: nothing to do"; exit 0; fi
S="$(cd "$1" && pwd)"
RUN="$(cat "$S/rundir" 2>/dev/null || true)"
BRIDGE=xrunk8s0
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

ours() { # pid -> 0 when its command line names a path in STATE_DIR (or the run dir)
  local args
  args="$(tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline")" || return 1
  case "$args" in *"$S/"*) return 0 ;; esac
  [ -n "$RUN" ] && case "$args" in *"$RUN"*) return 0 ;; esac
  return 1
}
stop() { # component: SIGTERM, up to 15 s, then SIGKILL
  local f="$S/pids/$1.pid" pid i
  [ -f "$f" ] || return 0
  pid="$(cat "$f" 2>/dev/null)"
  if [ -n "$pid" ] && ours "$pid"; then
    kill -TERM "$pid" 2>/dev/null
    for i in $(seq 1 30); do ours "$pid" || break; sleep 0.5; done
    if ours "$pid"; then say "$1 ($pid) ignored SIGTERM: SIGKILL"; kill -KILL "$pid" 2>/dev/null; sleep 0.2; fi
    say "stopped $1 ($pid)"
  fi
  rm -f "$f"
}

# The kubelet first, so that it restarts nothing; the control plane last, so
# that a log of what the node did stays complete.
stop kubelet
# kube-proxy (its iptables rules go below, with the host-wide state).
stop kube-proxy

# Containers of our containerd: runc's state for them lives in RUN/runc/k8s.io.
runc_root="$RUN/runc/k8s.io"
if [ -n "$RUN" ] && [ -d "$runc_root" ] && command -v runc >/dev/null; then
  ids="$(runc --root "$runc_root" list -q 2>/dev/null)"
  for id in $ids; do
    runc --root "$runc_root" kill "$id" KILL >/dev/null 2>&1
    runc --root "$runc_root" delete --force "$id" >/dev/null 2>&1 || say "runc delete $id failed"
  done
  [ -n "$ids" ] && say "removed $(echo "$ids" | wc -w) container(s)"
fi
# Its shims: started with -address RUN/containerd.sock.
if [ -n "$RUN" ]; then
  shims=()
  for d in /proc/[0-9]*; do
    p="${d#/proc/}"
    args="$(tr '\0' ' ' 2>/dev/null <"$d/cmdline")" || continue
    case "$args" in *containerd-shim-runc-v2*"$RUN/containerd.sock"*) shims+=("$p") ;; esac
  done
  if [ ${#shims[@]} -gt 0 ]; then
    kill -KILL "${shims[@]}" 2>/dev/null
    say "killed ${#shims[@]} shim(s)"
  fi
fi
stop containerd
stop kube-scheduler
stop kube-controller-manager
stop kube-apiserver
stop etcd
stop registry

# Mounts under STATE_DIR or the run dir (rootfs overlays, pod volumes, sandbox
# shm, network namespaces, the kubelet's rshared bind of its root dir), deepest first.
for pass in 1 2 3 4 5; do
  mapfile -t mnts < <(findmnt -rn -o TARGET | awk -v s="$S" -v r="${RUN:-/nonexistent}" \
    'index($0, s"/")==1 || $0==s || index($0, r"/")==1 || $0==r' | sort -r)
  [ ${#mnts[@]} -gt 0 ] || break
  for m in "${mnts[@]}"; do
    m="$(printf %b "$m")"  # findmnt -r writes odd characters as \xHH
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  say "unmounted ${#mnts[@]} mount(s) (pass $pass)"
done

# What follows is host-wide (the bridge, /kubepods, iptables, sysctls, fixed
# paths). up.sh records the host in STATE_DIR/host only once it has passed its
# checks (no cluster running, ports free), so a state dir whose up was refused,
# e.g. because another cluster is running, never touches that other cluster.
if [ ! -f "$S/host/sysctl" ]; then
  [ -n "$RUN" ] && [ -d "$RUN" ] && { rm -rf "$RUN"; rmdir /run/xrun-k8s 2>/dev/null; }
  rm -f "$S/env"
  say "down: $S (its up never claimed the host: host-wide state left alone)"
  exit 0
fi

# kube-proxy's iptables rules for the Services.
BIN="$(cat "$S/bindir" 2>/dev/null || true)"
if [ -x "$BIN/kube-proxy" ]; then
  "$BIN/kube-proxy" --cleanup >"$S/logs/kube-proxy-cleanup.log" 2>&1 && say "removed kube-proxy's iptables rules" ||
    say "kube-proxy --cleanup failed (its log: $S/logs/kube-proxy-cleanup.log)"
fi

# The CNI bridge and any veth still on it.
if ip link show "$BRIDGE" >/dev/null 2>&1; then
  for v in $(ip -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    ip link del "$v" 2>/dev/null
  done
  ip link del "$BRIDGE" 2>/dev/null && say "deleted bridge $BRIDGE"
fi

# The kubelet's cgroups (/kubepods in each v1 hierarchy), unless they were there before.
for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
  [ -d "$d" ] || continue
  grep -qxF "$d" "$S/host/cgroups-before" 2>/dev/null && continue
  find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
  [ -d "$d" ] && say "could not remove $d (still in use?)" || say "removed cgroup $d"
done

# The kubelet's iptables chains (KUBE-FIREWALL with its INPUT/OUTPUT jumps,
# KUBE-IPTABLES-HINT, KUBE-KUBELET-CANARY), those that were not there before up.
if [ -f "$S/host/iptables-chains-before" ]; then
  for ipt in iptables ip6tables; do
    command -v $ipt >/dev/null || continue
    for tc in filter:KUBE-FIREWALL mangle:KUBE-IPTABLES-HINT mangle:KUBE-KUBELET-CANARY \
              nat:KUBE-KUBELET-CANARY filter:KUBE-KUBELET-CANARY; do
      tbl="${tc%%:*}" chain="${tc#*:}"
      grep -qxF "$ipt $tbl $chain" "$S/host/iptables-chains-before" && continue
      $ipt -w -t $tbl -S "$chain" >/dev/null 2>&1 || continue
      for from in INPUT OUTPUT; do
        while $ipt -w -t $tbl -D $from -j "$chain" 2>/dev/null; do :; done
      done
      $ipt -w -t $tbl -F "$chain" 2>/dev/null
      $ipt -w -t $tbl -X "$chain" 2>/dev/null && say "removed $ipt -t $tbl $chain"
    done
  done
fi

# Host paths the components hard-code: remove those that up found absent; in
# those it found, remove only what points into STATE_DIR or names our network.
if [ -f "$S/host/paths-before" ]; then
  for l in /var/log/containers/*; do
    [ -L "$l" ] || continue
    case "$(readlink "$l")" in "$S"/*) rm -f "$l" ;; esac
  done
  for f in /var/lib/cni/results/xrun-k8s-*; do   # xrun-k8s-<sandbox id>-eth0
    [ -e "$f" ] || continue
    id="${f#/var/lib/cni/results/xrun-k8s-}"; id="${id%-*}"
    rm -f "$f" "/var/lib/cni/results/cni-loopback-$id-lo"
  done
  for p in /var/lib/kubelet /var/lib/cni /usr/libexec/kubernetes /var/log/containers; do
    [ -e "$p" ] || continue
    grep -qxF "$p" "$S/host/paths-before" && continue
    rm -rf "$p" && say "removed $p"
  done
fi

# nf_tables tables that iptables created for the kubelet's chains (ip6 mangle,
# nat, filter when nothing used them before), if they are left empty.
if [ -f "$S/host/nft-tables-before" ] && command -v nft >/dev/null; then
  nft list tables 2>/dev/null | while read -r _ fam tbl; do
    grep -qx "table $fam $tbl" "$S/host/nft-tables-before" && continue
    case "$fam:$tbl" in ip:filter|ip:nat|ip:mangle) ipt=iptables ;; ip6:filter|ip6:nat|ip6:mangle) ipt=ip6tables ;; *) continue ;; esac
    $ipt -w -t "$tbl" -S 2>/dev/null | grep -q '^-[AN] ' && continue
    nft delete table "$fam" "$tbl" 2>/dev/null && say "removed empty nft table $fam $tbl"
  done
fi

# Sysctls the kubelet and the bridge plugin set.
if [ -f "$S/host/sysctl" ]; then
  while read -r k v; do
    [ -n "$k" ] || continue
    cur="$(cat "/proc/sys/$k" 2>/dev/null)" || continue
    if [ "$cur" != "$v" ]; then echo "$v" >"/proc/sys/$k" 2>/dev/null && say "sysctl $k: $cur -> $v"; fi
  done <"$S/host/sysctl"
  fi
rm -f "$S"/host/*

if [ -n "$RUN" ] && [ -d "$RUN" ]; then
  rm -rf "$RUN"
  rmdir /run/xrun-k8s 2>/dev/null
fi
rm -f "$S/env"
say "down: $S"
exit 0
