#!/usr/bin/env bash
# Starts a second Docker daemon on the GPU host WITHOUT the NVIDIA runtime
# (no runtime hook on its PATH, no nvidia runtime): what a first GPU submit
# meets on a box whose toolkit is missing. The GPU suite submits to it
# (XRUN_PLAIN_HOST=unix:///var/run/docker-plain.sock). Run after up.sh.
set -euo pipefail
prefix=${XRUN_GPU_HOST_PREFIX:-/opt/xrun-gpu-host}
sock=/var/run/docker-plain.sock
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$prefix/plain-bin" /var/lib/docker-plain
echo '{}' > "$prefix/daemon-plain.json"
for b in dockerd containerd containerd-shim-runc-v2 runc; do ln -sf "$prefix/bin/$b" "$prefix/plain-bin/$b"; done
# A network namespace of its own: with --bridge=none dockerd deletes any
# interface named docker0, which here belongs to the first daemon.
PATH="$prefix/plain-bin:/usr/sbin:/usr/bin:/sbin:/bin" LD_LIBRARY_PATH="$prefix/lib.missing" \
  setsid unshare --net dockerd -H "unix://$sock" --data-root /var/lib/docker-plain --exec-root /var/run/docker-plain \
  --pidfile /var/run/docker-plain.pid --bridge=none --iptables=false --ip6tables=false --ip-masq=false \
  --config-file "$prefix/daemon-plain.json" >"$prefix/dockerd-plain.log" 2>&1 </dev/null &
for _ in $(seq 1 60); do
  if DOCKER_SOCK=$sock python3 "$here/dockerapi.py" ping; then echo "plain-dockerd: answers on unix://$sock"; exit 0; fi
  sleep 0.5
done
tail -20 "$prefix/dockerd-plain.log" >&2
exit 1
