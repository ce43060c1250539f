#!/usr/bin/env bash
# Makes a CPU base image on a host that cannot reach a container registry:
# a Debian root filesystem from debootstrap (python3, numpy, and with --torch
# Debian's PyTorch), loaded with `docker import`. Needs root and a Debian
# mirror. Takes 1-3 min, or 5-22 min with --torch (5 on an idle 2-core machine,
# 18-22 on a loaded one with a slow mirror), mostly downloading.
set -euo pipefail

usage() {
	cat <<EOF
usage: $0 [--torch] [--name NAME] [--mirror URL] [--suite SUITE] [--force]

  --torch        also install python3-torch (default name xrun/cpu-torch:bookworm)
  --name NAME    image name (default xrun/cpu-base:bookworm)
  --mirror URL   Debian mirror (default http://deb.debian.org/debian)
  --suite SUITE  Debian suite (default bookworm)
  --force        remake the image even when it exists
EOF
}

torch=0
name=""
mirror="http://deb.debian.org/debian"
suite="bookworm"
force=0
while [ $# -gt 0 ]; do
	case "$1" in
	--torch) torch=1 ;;
	--name) name="${2:?--name needs a value}"; shift ;;
	--name=*) name="${1#*=}" ;;
	--mirror) mirror="${2:?--mirror needs a value}"; shift ;;
	--mirror=*) mirror="${1#*=}" ;;
	--suite) suite="${2:?--suite needs a value}"; shift ;;
	--suite=*) suite="${1#*=}" ;;
	--force) force=1 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "make-cpu-base.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
	shift
done
if [ -z "$name" ]; then
	if [ "$torch" = 1 ]; then name="xrun/cpu-torch:$suite"; else name="xrun/cpu-base:$suite"; fi
fi
say() { echo "make-cpu-base.sh: $*" >&2; }

# debootstrap creates device nodes and runs a chroot: a user with sudo gets
# the script rerun under it (make demo is run as either).
if [ "$(id -u)" != 0 ]; then
	if ! command -v sudo >/dev/null; then
		say "needs root (debootstrap creates device nodes and runs a chroot): run it as root"
		exit 1
	fi
	say "needs root (debootstrap creates device nodes and runs a chroot): rerunning with sudo"
	exec sudo --preserve-env=DOCKER_HOST,DOCKER_CONTEXT,DOCKER_CONFIG,TMPDIR "$0" "$@"
fi
if ! command -v docker >/dev/null; then
	say "no docker command; install the Docker CLI"
	exit 1
fi
if ! docker version >/dev/null 2>&1; then
	say "the Docker daemon does not answer; start it or set DOCKER_HOST"
	exit 1
fi
if [ "$force" = 0 ] && docker image inspect "$name" >/dev/null 2>&1; then
	say "$name exists; pass --force to remake it"
	exit 0
fi
if ! command -v debootstrap >/dev/null; then
	say "installing debootstrap"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y --no-install-recommends debootstrap >/dev/null 2>&1 ||
		{ apt-get update -qq && apt-get install -y --no-install-recommends debootstrap >/dev/null; } ||
		{ say "could not install debootstrap with apt-get; install it by hand"; exit 1; }
fi

work="$(mktemp -d "${TMPDIR:-/var/tmp}/xrun-cpu-base.XXXXXX")"
root="$work/rootfs"
cleanup() {
	# debootstrap mounts /proc and /sys in the target; never delete
	# through a mount that survived a failure.
	if [ -d "$root" ]; then
		awk -v r="$root" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
			umount -l "$m" 2>/dev/null || true
		done
	fi
	rm -rf --one-file-system "$work"
}
trap cleanup EXIT

packages="python3,python3-numpy"
took="1-3 minutes"
if [ "$torch" = 1 ]; then packages="$packages,python3-torch" took="5-22 minutes"; fi
say "debootstrap $suite ($packages) from $mirror: usually $took, mostly downloading"

# progress turns debootstrap's one line per package into a line per stage
# and one every 25 packages, with the time so far: a torch base fetches
# several hundred packages and would otherwise be minutes of silence.
progress() {
	local stage="" n=0 verb
	while IFS= read -r line; do
		printf '%s\n' "$line" >>"$work/debootstrap.log"
		# Validating follows each Retrieving: counting it would flip
		# between two stages on every package.
		case "$line" in
		"I: Retrieving "* | "I: Extracting "* | "I: Unpacking "* | "I: Configuring "*) ;;
		*) continue ;;
		esac
		verb="${line#I: }"
		verb="${verb%% *}"
		if [ "$verb" != "$stage" ]; then
			[ -n "$stage" ] && say "$(elapsed) ${stage,,}: $n done"
			stage="$verb" n=0
			say "$(elapsed) ${stage,,} packages"
		fi
		n=$((n + 1))
		if [ $((n % 25)) = 0 ]; then say "$(elapsed) ${stage,,}: $n so far"; fi
	done
	[ -n "$stage" ] && say "$(elapsed) ${stage,,}: $n done"
	return 0
}
elapsed() { printf '[%d:%02d]' $((SECONDS / 60)) $((SECONDS % 60)); }

: >"$work/debootstrap.log"
SECONDS=0
if ! debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" 2>&1 | progress; then
	tail -n 20 "$work/debootstrap.log" >&2
	[ -f "$root/debootstrap/debootstrap.log" ] && tail -n 20 "$root/debootstrap/debootstrap.log" >&2
	say "debootstrap failed (log above); check --mirror and the network"
	exit 1
fi

# Shrink the image: package caches and lists are rebuilt by apt-get update.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
	"$root"/var/log/* "$root"/tmp/* "$root"/root/.cache

say "$(elapsed) debootstrap done; importing as $name"
tar --numeric-owner -C "$root" -c . | docker import \
	--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	--change 'ENV LANG=C.UTF-8' \
	--change 'CMD ["/bin/bash"]' \
	- "$name" >/dev/null
docker run --rm "$name" python3 -c 'import numpy' ||
	{ say "the imported image cannot import numpy"; exit 1; }
say "$(elapsed) made $name"
