#!/usr/bin/env bash
# Stands up a Docker Engine with the NVIDIA container runtime (CDI mode) on a
# GPU machine that has the NVIDIA driver but no Docker, from the bundle that
# scripts/gpu-host/bundle.sh makes. Run as root; idempotent (a second run
# finds the daemon up and only checks it). See docs/gpu-host.md.
#   scripts/gpu-host/up.sh [BUNDLE]
# Environment: XRUN_GPU_HOST_PREFIX (install folder, /opt/xrun-gpu-host),
# XRUN_GPU_HOST_DATA (Docker's data root, /var/lib/docker).
set -euo pipefail
bundle=${1:-.gpu-host/bundle.tar.xz}
prefix=${XRUN_GPU_HOST_PREFIX:-/opt/xrun-gpu-host}
data=${XRUN_GPU_HOST_DATA:-/var/lib/docker}
sock=/var/run/docker.sock
here=$(cd "$(dirname "$0")" && pwd)
start=$(date +%s.%N)
say() { printf 'gpu-host: %s\n' "$*"; }
elapsed() { awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}'; }
die() { say "$*" >&2; exit 1; }

answers() { python3 "$here/dockerapi.py" ping; }

[ "$(id -u)" = 0 ] || die "run as root: it installs under $prefix and starts dockerd"
command -v nvidia-smi >/dev/null || die "no nvidia-smi: install the NVIDIA driver first"

if [ -x "$prefix/bin/dockerd" ] && answers; then
  say "dockerd already answers on $sock"
  exit 0
fi

[ -f "$bundle" ] || die "no bundle at $bundle: make it with scripts/gpu-host/bundle.sh (make gpu-host-bundle)"
mkdir -p "$prefix"
tar -C "$prefix" -xJf "$bundle"
# Use the bundled libraries only where this machine lacks one: its own
# are newer or the same.
mkdir -p "$prefix/lib.missing"
for lib in "$prefix"/lib/*; do
  name=$(basename "$lib")
  ldconfig -p | grep -q "^[[:space:]]*$name " || cp "$lib" "$prefix/lib.missing/"
done
say "unpacked $(tr '\n' ' ' < "$prefix/VERSIONS") into $prefix; libraries taken from the bundle: $(ls "$prefix/lib.missing" | tr '\n' ' ')"
export PATH="$prefix/bin:$PATH"

# cgroups: dockerd needs a cgroup hierarchy mounted (cgroupfs driver; no systemd here).
if ! grep -q ' /sys/fs/cgroup ' /proc/mounts; then
  mount -t cgroup2 none /sys/fs/cgroup
  say "mounted cgroup2 at /sys/fs/cgroup"
fi

# overlay2 cannot stack on an overlay root: keep images on a tmpfs then.
mkdir -p "$data"
if [ "$(stat -f -c %T "$(dirname "$data")")" = overlayfs ] && ! grep -q " $data " /proc/mounts; then
  mount -t tmpfs -o size=80% tmpfs "$data"
  say "the root file system is an overlay: Docker's data root $data is a tmpfs"
fi

# The CDI spec: every GPU and the driver files a container needs, as the
# toolkit finds them on this machine. The CDI-mode runtime reads it.
mkdir -p /etc/cdi
nvidia-ctk --quiet cdi generate --output=/etc/cdi/nvidia.yaml \
  --nvidia-cdi-hook-path="$prefix/bin/nvidia-cdi-hook" > "$prefix/cdi-generate.log" 2>&1 \
  || { cat "$prefix/cdi-generate.log" >&2; die "nvidia-ctk cdi generate failed"; }
say "CDI devices: $(nvidia-ctk --quiet cdi list 2>/dev/null | tr '\n' ' ')"

# The runtime "nvidia" is the toolkit's CDI-mode runtime, as
# `nvidia-ctk runtime configure --runtime=docker` registers it. dockerd
# answers --gpus requests only when nvidia-container-runtime-hook is on its
# PATH; the CDI-mode runtime removes that legacy hook and injects the CDI
# devices that NVIDIA_VISIBLE_DEVICES names instead. runc stays the default.
mkdir -p /etc/docker /etc/nvidia-container-runtime
cat > /etc/docker/daemon.json <<JSON
{
  "runtimes": {"nvidia": {"path": "$prefix/bin/nvidia-container-runtime.cdi", "runtimeArgs": []}},
  "data-root": "$data",
  "iptables": false,
  "ip6tables": false,
  "ip-masq": false,
  "userland-proxy": false
}
JSON

start_dockerd() {
  : > "$prefix/dockerd.log"
  # setsid: the daemon outlives the shell that started it.
  LD_LIBRARY_PATH="$prefix/lib.missing" setsid dockerd -H "unix://$sock" "$@" \
    >> "$prefix/dockerd.log" 2>&1 < /dev/null &
  echo $! > "$prefix/dockerd.pid"
  for _ in $(seq 1 120); do
    if answers; then return 0; fi
    kill -0 "$(cat "$prefix/dockerd.pid")" 2>/dev/null || return 1
    sleep 0.5
  done
  return 1
}

if ! start_dockerd; then
  if grep -qiE 'bridge|docker0|netlink|operation not supported' "$prefix/dockerd.log"; then
    say "dockerd could not make its bridge network: starting it with --bridge=none (submit with --network none)"
    tail -3 "$prefix/dockerd.log" | sed 's/^/  /'
    pkill -f "$prefix/bin/dockerd" 2>/dev/null || true
    sleep 1
    start_dockerd --bridge=none || { tail -30 "$prefix/dockerd.log" >&2; die "dockerd did not start"; }
    echo none > "$prefix/network"
  else
    tail -30 "$prefix/dockerd.log" >&2
    die "dockerd did not start (log: $prefix/dockerd.log)"
  fi
fi
say "dockerd answers on unix://$sock after $(elapsed) s"
