#!/usr/bin/env bash
# Builds the bundle that turns a GPU machine without Docker into a Docker host
# with the NVIDIA container runtime (scripts/gpu-host/up.sh unpacks it there):
#   - Docker Engine: Debian's dockerd, containerd, containerd-shim-runc-v2 and
#     runc, with the shared libraries they load beside them (up.sh uses only
#     those the GPU machine lacks);
#   - the NVIDIA Container Toolkit's Go commands (nvidia-ctk, the CDI-mode
#     runtime, the CDI hook, the runtime hook), built from the Go module proxy
#     at a pinned release.
# `make gpu-host-bundle` adds a static xrun and the GPU suite's test binary.
# Output: .gpu-host/bundle.tar.xz (git-ignored), small enough to travel.
# Needs Debian or Ubuntu's apt (for `apt-get download`), Go and gcc (cgo: the
# toolkit loads NVML at run time).
#   scripts/gpu-host/bundle.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-.gpu-host}
toolkit=${NVIDIA_TOOLKIT_VERSION:-v1.20.1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$(date +%s)

echo "bundle: Debian's Docker Engine packages"
mkdir -p "$work/debs" "$work/root" "$work/b/bin" "$work/b/lib"
if [ -z "$(ls /var/lib/apt/lists/ 2>/dev/null | grep -v -e lock -e partial)" ]; then
  apt-get update -qq
fi
(cd "$work/debs" && apt-get download -qq docker.io containerd runc 2>/dev/null)
for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$work/root"; done
for f in usr/sbin/dockerd usr/bin/containerd usr/bin/containerd-shim-runc-v2 usr/sbin/runc; do
  cp "$work/root/$f" "$work/b/bin/"
done
# Every shared library they load but the C library's own: up.sh keeps only
# those the GPU machine does not have.
for f in dockerd runc; do
  ldd "$work/b/bin/$f" | awk '$3 ~ /^\// {print $3}'
done | sort -u | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' | while read -r lib; do
  cp -L "$lib" "$work/b/lib/$(basename "$lib")"
done
(cd "$work/debs" && ls *.deb) > "$work/b/VERSIONS"

echo "bundle: NVIDIA Container Toolkit $toolkit from the Go module proxy"
mkdir -p "$work/nct"
(
  cd "$work/nct"
  printf 'module xrun.local/gpuhost\n\ngo 1.26\n' > go.mod
  GOFLAGS=-mod=mod go get "github.com/NVIDIA/nvidia-container-toolkit@$toolkit" >/dev/null 2>&1
  for cmd in nvidia-ctk nvidia-container-runtime.cdi nvidia-cdi-hook nvidia-container-runtime-hook; do
    CGO_ENABLED=1 CGO_CFLAGS='-O2 -Wno-deprecated-declarations' GOFLAGS=-mod=mod \
      go build -trimpath -ldflags '-s -w' -o "$work/b/bin/$cmd" "github.com/NVIDIA/nvidia-container-toolkit/cmd/$cmd"
  done
)
echo "nvidia-container-toolkit $toolkit" >> "$work/b/VERSIONS"

mkdir -p "$out"
# The x86 filter and -9e keep the bundle, xrun and the GPU suite under the
# 64 MiB a device call carries beside the checkout.
tar -C "$work/b" -c . | xz -T0 --x86 --lzma2=preset=9e > "$out/bundle.tar.xz.tmp"
mv "$out/bundle.tar.xz.tmp" "$out/bundle.tar.xz"
echo "bundle: $out/bundle.tar.xz, $(du -h "$out/bundle.tar.xz" | cut -f1) ($(du -sh "$work/b" | cut -f1) unpacked), in $(( $(date +%s) - start )) s"
sed 's/^/  /' "$work/b/VERSIONS"
