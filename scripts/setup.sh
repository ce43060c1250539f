#!/usr/bin/env bash
# Installs what building and testing xrun needs on a Debian/Ubuntu machine
# (Go and the Docker Engine are expected to be there already).
set -euo pipefail
# Root runs apt-get itself (a container or CI image often has no sudo); a
# user needs sudo.
if [ "$(id -u)" -eq 0 ]; then
	sudo=""
elif command -v sudo >/dev/null; then
	sudo="sudo"
else
	echo "setup: installing packages needs root: run this as root, or install sudo" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
start=$SECONDS
say() { printf 'setup [%3ds]: %s\n' "$((SECONDS - start))" "$*"; }
# debootstrap: makes the CPU base images without a registry.
# python3-numpy, python3-torch: the runner's CPU end-to-end tests.
# python3-pytest: the Python harness's tests (make test-python).
# openssh-server, openssl: the remote-host tests (sshd and TLS on loopback).
# hyperfine: the submit benchmark.
# chromium: the dashboard's test in a real browser (client/site, xrun report --html).
# slurm-wlm, munge: the one-node Slurm cluster of the Slurm suite (scripts/slurm-cluster);
#   socat: its slow login node (an ssh ProxyCommand that waits 3 s).
# postgresql: xrun serve's tests on PostgreSQL (client/server starts its own server with initdb and pg_ctl).
# docker-compose: the server's compose file (images/server/compose.yaml) is tested by bringing it up.
pkgs=(debootstrap debian-archive-keyring python3 python3-numpy python3-torch python3-pytest
  busybox-static hyperfine openssl openssh-server openssh-client iproute2
  ca-certificates make jq chromium slurm-wlm munge socat postgresql docker-compose)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	say "the ${#pkgs[@]} packages are installed"
else
	say "apt-get update"
	$sudo apt-get update -qq
	say "installing ${#missing[@]} packages (${missing[*]}): 1-9 minutes, mostly python3-torch's download"
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	say "installed"
fi
command -v go >/dev/null || { echo "setup: Go is not installed; get it from https://go.dev/dl/" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "setup: the Docker daemon is not reachable; start it (systemctl start docker) or set DOCKER_HOST" >&2; exit 1; }
say "ready"
