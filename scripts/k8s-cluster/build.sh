#!/usr/bin/env bash
# Builds the binaries of the single-node test cluster (docs/test-cluster.md)
# into ${XRUN_K8S_CACHE:-$HOME/.cache/xrun/k8s-cluster}/<key>/bin, where <key>
# hashes tools/go.mod, tools/go.sum and this script, and installs the Debian
# packages the cluster needs. Does nothing when that bin dir is complete.
# Its last line of stdout is the bin dir.
#
#   XRUN_K8S_CACHE    where the keyed bin dirs live
#   XRUN_K8S_GOCACHE  Go build cache for these builds (default: $XRUN_K8S_CACHE/go-build,
#                     kept apart from the project's so a key change rebuilds only what changed)
#   XRUN_K8S_NICE     niceness of the go build (default 10)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="$here/tools"
cache="${XRUN_K8S_CACHE:-$HOME/.cache/xrun/k8s-cluster}"
start=$SECONDS

say() { printf '[build %4ds] %s\n' "$((SECONDS - start))" "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# The binaries bin/ must hold, by the name up.sh runs them under.
bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl
      etcd containerd containerd-shim-runc-v2 registry pause)
# Debian packages: runc and the CNI plugins the cluster uses, the host tools
# the kubelet and kube-proxy call, busybox for the smoke image.
debs=(runc containernetworking-plugins iptables conntrack socat ethtool iproute2
      util-linux mount openssl curl busybox-static ca-certificates)

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# One build.sh at a time per cache: two test packages may start clusters at once.
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

# --- 1. Debian packages -------------------------------------------------------
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "apt: installing ${missing[*]}"
  apt_log="$cache/apt.log"
  if ! { as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
         as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
           "${missing[@]}"; } </dev/null >"$apt_log" 2>&1; then
    tail -n 30 "$apt_log" >&2
    die "apt-get failed (log: $apt_log)"
  fi
else
  say "apt: all packages present"
fi

# --- 2. cache key -------------------------------------------------------------
key="$(cat "$tools/go.mod" "$tools/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)"
dir="$cache/$key"
bin="$dir/bin"
complete=1
[ -f "$bin/.complete" ] || complete=0
for b in "${bins[@]}"; do [ -x "$bin/$b" ] || complete=0; done
if [ "$complete" = 1 ]; then
  touch "$dir"   # most recently used, for the pruning below
  say "cache hit: $bin"
  echo "$bin"
  exit 0
fi

# --- 3. go build --------------------------------------------------------------
command -v go >/dev/null || die "go not found in PATH"
mkdir -p "$dir"
export GOCACHE="${XRUN_K8S_GOCACHE:-$cache/go-build}"
# go.mod and go.sum are complete: a build must never rewrite them.
export GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
# Everything up to and including v1.37.2 is fixed by go.mod; the versions the
# binaries report are stamped here so kubectl/kubelet/apiserver agree.
kver=v1.37.2
now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $p.gitVersion=$kver -X $p.gitMajor=1 -X $p.gitMinor=37"
  ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=$now"
done
ldflags+=" -X github.com/containerd/containerd/v2/version.Version=v2.4.2"
ldflags+=" -X github.com/distribution/distribution/v3/version.version=v3.0.0"

say "go mod download ($(go version | cut -d' ' -f3))"
(cd "$tools" && go mod download) >&2

out="$dir/bin.tmp"
rm -rf "$out"; mkdir -p "$out"
say "go build (one invocation, GOCACHE=$GOCACHE): ${bins[*]}"
# One go build for all eleven mains, so the packages they share compile once.
(cd "$tools" && nice -n "${XRUN_K8S_NICE:-10}" go build -trimpath -ldflags "$ldflags" -o "$out/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kubelet \
  k8s.io/kubernetes/cmd/kube-proxy \
  k8s.io/kubernetes/cmd/kubectl \
  go.etcd.io/etcd/server/v3 \
  github.com/containerd/containerd/v2/cmd/containerd \
  github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
  github.com/distribution/distribution/v3/cmd/registry \
  ./pause) >&2
# The etcd server main is the module root, so go names its binary "server".
mv "$out/server" "$out/etcd"
for b in "${bins[@]}"; do [ -x "$out/$b" ] || die "go build did not produce $b"; done
for b in kube-apiserver etcd containerd; do
  v="$("$out/$b" --version)" || die "$b --version failed"
  say "built ${v%%$'\n'*}"
done
printf '%s\n' "${bins[@]}" > "$out/.complete"
rm -rf "$bin"; mv "$out" "$bin"
# Other keys come from another go.mod, go.sum or build.sh (another branch or
# checkout may still use one): keep the most recently used, remove the rest.
keep=1
for d in $(ls -1dt "$cache"/* 2>/dev/null); do
  [ -d "$d" ] && [[ "${d##*/}" =~ ^[0-9a-f]{16}$ ]] && [ "$d" != "$dir" ] || continue
  if [ $keep -gt 0 ]; then keep=$((keep - 1)); continue; fi
  say "removing stale $d"; rm -rf "$d"
done
say "done: $(du -sh "$bin" | cut -f1) in $bin"
echo "$bin"
