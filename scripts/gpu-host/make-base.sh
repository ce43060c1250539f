#!/usr/bin/env bash
# Makes the CUDA + PyTorch + Triton base image on a GPU host that reaches no
# registry: this machine's own root file system with its Python environment
# (torch, Triton, nvcc), less what the NVIDIA runtime injects at run time (the
# driver's files, as the CDI spec lists them) and what no experiment uses
# (profilers other than Nsight Compute, other frameworks), imported as one
# layer. It is tagged as the base that `image: {base: cuda-torch}` resolves
# to, so experiments run unchanged. images/README.md says how it differs from the Dockerfile-built
# base. Run after scripts/gpu-host/up.sh, as root.
#   scripts/gpu-host/make-base.sh [REF]
# XRUN_BASE_KEEP=1 keeps the frameworks this leaves out (jax, cupy, ...).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ref=${1:-xrun/cuda13-torch2.11:py3.12}
start=$(date +%s)
say() { printf 'make-base: %s\n' "$*"; }

read -r venv pyver torch triton < <(python3 - <<'PY'
import sys, importlib.metadata as md
def v(n):
    try: return md.version(n)
    except md.PackageNotFoundError: return "none"
print(sys.prefix, "%d.%d" % sys.version_info[:2], v("torch").split("+")[0], v("triton"))
PY
)
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] || { say "no nvcc on this machine: the base needs the CUDA toolkit" >&2; exit 1; }
cuda_home=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
cuda=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
cuda_full=$("$nvcc" --version | sed -n 's/.*V\([0-9.]*\)$/\1/p')
say "python $pyver at $venv, torch $torch, triton $triton, CUDA $cuda_full at $cuda_home"
case "$ref" in
  *"torch${torch%.*}"*":py$pyver"*) ;;
  *) say "warning: $ref names other versions than this machine has (torch $torch, python $pyver)";;
esac

# Nsight Compute's folder: where the ncu on PATH (often a wrapper script
# in the toolkit's bin) really lives.
ncu_home=
if ncu=$(command -v ncu); then
  real=$(readlink -f "$ncu")
  for cand in "$(dirname "$real")" "$cuda_home"/nsight-compute* /opt/nvidia/nsight-compute/*; do
    if [ -x "$cand/ncu" ] && [ -d "$cand/target" ]; then ncu_home=$(readlink -f "$cand"); break; fi
  done
  say "Nsight Compute: $ncu -> ${ncu_home:-its folder not found: --profile will not work in this base}"
else
  say "no ncu on PATH: the base has no Nsight Compute, and --profile will not work in it"
fi

excl=$(mktemp)
skel=$(mktemp -d)
trap 'rm -rf "$excl" "$skel"' EXIT
# The folders left out above that a container still needs, empty.
mkdir -p "$skel/tmp" "$skel/root" "$skel/home" "$skel/mnt" "$skel/run"
chmod 1777 "$skel/tmp"
chmod 700 "$skel/root"
{
  # Not files of the system: scratch, caches, state of services (only the
  # system's folders go in at all: see members below).
  for d in var/tmp var/cache var/log; do echo "./$d/*"; done
  for d in var/lib/docker var/lib/containerd opt/xrun-gpu-host; do echo "./$d"; done
  awk '$3 ~ /^(proc|sysfs|devtmpfs|devpts|tmpfs|cgroup2?|mqueue|securityfs|debugfs|tracefs|fusectl|configfs|bpf|hugetlbfs|pstore)$/ && $2 != "/" {print "." $2}' /proc/mounts
  # The driver: the runtime mounts the host's own (CDI spec hostPaths), and
  # any other copy of its libraries in the system's folders stays out too.
  sed -n 's/^ *hostPath: *//p' /etc/cdi/nvidia.yaml | sed 's|^/|./|'
  for b in $(sed -n 's/^ *hostPath: *.*\/\(lib[^/]*\.so\)[^/]*$/\1/p' /etc/cdi/nvidia.yaml | sort -u); do
    for d in /lib /lib64 /usr/lib /usr/lib64 /usr/lib/x86_64-linux-gnu; do
      for f in "$d/$b" "$d/$b".*; do if [ -e "$f" ]; then echo ".$(readlink -f "$(dirname "$f")")/$(basename "$f")"; fi; done
    done
  done
  if [ -d /usr/local/nvidia ]; then echo ./usr/local/nvidia; fi
  # Profilers and debuggers: large, and not what a job runs; Nsight
  # Compute (ncu) alone stays, for `xrun submit --profile`.
  for d in /opt/nvidia/* "$cuda_home"/nsight* "$cuda_home"/extras/CUPTI/samples "$cuda_home"/libnvvp; do
    if [ -e "$d" ] && { [ -z "$ncu_home" ] || [ "${ncu_home#"$d"}" = "$ncu_home" ]; }; then echo ".$d"; fi
  done
  if [ -z "${XRUN_BASE_KEEP:-}" ]; then
    sp=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    for p in jax jaxlib jax_plugins jax_cuda13_plugin jax_cuda13_pjrt cupy cupy_backends cupyx \
             onnxruntime tensorflow tensorstore pyarrow cv2 opencv_python_headless.libs torch_geometric; do
      echo ".$sp/$p"
    done
  fi
} | sort -u > "$excl"

say "size of what goes in (du):"
du -shx --exclude-from=<(sed 's|^\./|/|' "$excl") /usr /etc /opt "$venv" 2>/dev/null | sed 's/^/  /' || true

# The system's folders only (the machine may hold work folders of its own).
members=()
for m in bin etc lib lib32 lib64 libx32 opt sbin srv usr var; do
  if [ -e "/$m" ]; then members+=("./$m"); fi
done
# PATH as this machine has it, less the driver's folder (the runtime
# puts nvidia-smi in /usr/bin).
path=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v -e '^/usr/local/nvidia' -e '^/opt/xrun-gpu-host' -e '^$' | paste -sd:)
changes=("ENV PATH=$path" "ENV CUDA_HOME=$cuda_home" "ENV CUDA_VERSION=$cuda_full"
         "ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility")
if [ -n "${CUDAHOSTCXX:-}" ]; then changes+=("ENV CUDAHOSTCXX=$CUDAHOSTCXX"); fi
say "importing ${members[*]} as $ref"
id=$(tar -C / --anchored --exclude-from="$excl" --warning=no-file-changed --warning=no-file-removed \
       --ignore-failed-read -cf - "${members[@]}" -C "$skel" ./tmp ./root ./home ./mnt ./run \
       2>/tmp/make-base-tar.log \
     | python3 "$here/dockerapi.py" import "$ref" "${changes[@]}" \
         "LABEL dev.xrun.base=host-import dev.xrun.cuda=$cuda dev.xrun.torch=$torch dev.xrun.triton=$triton dev.xrun.python=$pyver dev.xrun.made-on=$(hostname)" \
         "CMD [\"python3\"]")
tail -3 /tmp/make-base-tar.log | sed 's/^/  tar: /'
say "$ref is $id, made in $(( $(date +%s) - start )) s"
