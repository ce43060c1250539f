#!/usr/bin/env bash
# server-image.sh [TAG]: build the xrun server's image (images/server) from
# this checkout: a static xrun, the host's CA certificates, nothing else.
# TAG defaults to xrun/server:latest. Needs Go and a Docker daemon; pulls
# nothing (the image starts FROM scratch). XRUN_BIN=PATH takes a static
# xrun built already (CGO_ENABLED=0) instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-xrun/server:latest}
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
certs=/etc/ssl/certs/ca-certificates.crt
if [[ ! -s $certs ]]; then
	echo "server-image: $certs is missing: install ca-certificates (apt-get install ca-certificates)" >&2
	exit 1
fi
if [[ -n ${XRUN_BIN:-} ]]; then
	cp "$XRUN_BIN" "$ctx/xrun"
else
	echo "server-image: building a static xrun"
	CGO_ENABLED=0 go build -trimpath -ldflags "${LDFLAGS:--s -w}" -o "$ctx/xrun" ./cmd/xrun
fi
cp "$certs" "$ctx/ca-certificates.crt"
mkdir -p "$ctx/data/config" "$ctx/tmp"
chmod 0700 "$ctx/data"
chmod 1777 "$ctx/tmp"
cp images/server/Dockerfile "$ctx/Dockerfile"
echo "server-image: docker build -t $tag"
if ! docker build -q -t "$tag" "$ctx" >"$ctx/build.log" 2>&1; then
	cat "$ctx/build.log" >&2
	echo "server-image: docker build failed (its output is above)" >&2
	exit 1
fi
echo "server-image: made $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}'))"
