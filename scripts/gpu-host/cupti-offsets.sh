#!/usr/bin/env bash
# Prints where the CUPTI of this machine's toolkit keeps the fields the
# harness's kernel clock reads from CUPTI's activity API
# (runner/harness/xrun_harness/gpu/activityclock.py), for the newest kernel, memcpy and memset record structs
# its header declares (the header: the argument, else the first found in
# /usr/local/cuda* or beside torch's CUDA libraries). Needs gcc.
#   scripts/gpu-host/cupti-offsets.sh [cupti_activity.h]
set -euo pipefail
h=${1:-}
if [ -z "$h" ]; then
  site=$(python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))' 2>/dev/null || true)
  h=$(find /usr/local/cuda*/ ${site:+"$site/nvidia"} -name cupti_activity.h 2>/dev/null | head -1 || true)
fi
[ -n "$h" ] || { echo "cupti-offsets: no cupti_activity.h in /usr/local/cuda* or beside torch; pass its path" >&2; exit 1; }
inc=$(dirname "$h")
newest() { grep -ohE "\b$1[0-9]+\b" "$inc"/cupti_activity*.h | sort -V | tail -1; }
k=$(newest CUpti_ActivityKernel) c=$(newest CUpti_ActivityMemcpy) s=$(newest CUpti_ActivityMemset)
d=$(mktemp -d)
cat > "$d/o.c" <<C
#include <stdio.h>
#include <stddef.h>
#include <cupti.h>
int main(void) {
  printf("$k start %zu end %zu correlationId %zu name %zu\n", offsetof($k, start), offsetof($k, end), offsetof($k, correlationId), offsetof($k, name));
  printf("$c start %zu end %zu correlationId %zu\n", offsetof($c, start), offsetof($c, end), offsetof($c, correlationId));
  printf("$s start %zu end %zu correlationId %zu\n", offsetof($s, start), offsetof($s, end), offsetof($s, correlationId));
  printf("kinds memcpy %d memset %d concurrent_kernel %d\n", CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  return 0;
}
C
gcc -I"$inc" -I"$inc/.." -I/usr/local/cuda/include -o "$d/o" "$d/o.c"
echo "header: $h"
"$d/o"
