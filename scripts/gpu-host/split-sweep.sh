#!/usr/bin/env bash
# A GPU sweep run whole on one GPU, then split over two jobs that run at
# once on the machine's two GPUs (xrun submit --split 2), on a GPU machine
# made a Docker host from the bundle (make gpu-host-bundle):
#   scripts/gpu-host/split-sweep.sh [EXPERIMENT]     (default experiments/timing-validation)
# OUT (default /tmp/split-sweep) gets both submits' stderr, the two jobs'
# results.json and the parts', and summary.txt: the wall time of each
# submit, the GPU each part ran on, and each case's medians side by side.
set -euo pipefail
cd "$(dirname "$0")/../.."
exp=${1:-experiments/timing-validation}
out=${OUT:-/tmp/split-sweep}
mkdir -p "$out"
scripts/gpu-host/up.sh > "$out/up.log" 2>&1
if [ -z "$(docker images -q 'xrun/cuda13-torch2.11:py3.12' 2>/dev/null)" ]; then
  scripts/gpu-host/make-base.sh > "$out/make-base.log" 2>&1
fi
# The bundle and xrun may come in two calls to a lent machine whose upload
# is smaller than both: the first makes the host and the base.
if [ ! -f .gpu-host/xrun.xz ]; then
  echo "the host and its base are ready; run again with .gpu-host/xrun.xz to submit"
  exit 0
fi
xz -dc .gpu-host/xrun.xz > /usr/local/bin/xrun && chmod +x /usr/local/bin/xrun
export XDG_DATA_HOME=$out/data
nvidia-smi --query-gpu=index,name,clocks.max.sm,power.limit --format=csv,noheader > "$out/gpus.txt"

t0=$EPOCHREALTIME
xrun submit --gpus 1 --no-standby --json "$exp" > "$out/whole.json" 2> "$out/whole.log" || true
t1=$EPOCHREALTIME
xrun submit --gpus 1 --no-standby --queue --split 2 --json "$exp" > "$out/split.json" 2> "$out/split.log" || true
t2=$EPOCHREALTIME

python3 - "$out" "$t0" "$t1" "$t2" <<'PY' | tee "$out/summary.txt"
import json, os, shutil, sys
out, t0, t1, t2 = sys.argv[1], *map(float, sys.argv[2:])
store = os.path.join(out, "data", "xrun", "jobs")
def job(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except Exception as e:
        print(f"{name}: {e}")
        return None
def results(jid, keep):
    p = os.path.join(store, jid, "results.json")
    shutil.copy(p, os.path.join(out, keep))
    return json.load(open(p))
w, s = job("whole.json"), job("split.json")
print(f"whole: job {w and w['id']} {w and w['status']} in {t1 - t0:.1f} s")
print(f"split: job {s and s['id']} {s and s['status']} in {t2 - t1:.1f} s")
if not (w and s):
    sys.exit(0)
rw, rs = results(w["id"], "whole-results.json"), results(s["id"], "split-results.json")
for j in rs["split"]["jobs"]:
    rp = results(j["job_id"], f"part{j['part']}-results.json")
    gpus = ", ".join(f"GPU {g['index']} {g['name']}" for g in rp["env"]["gpus"])
    print(f"part {j['part']}: job {j['job_id']} {j['status']} on {gpus}, {rp['created_at']} to {rp.get('finished_at')}")
print(f"{'case':24} {'impl':12} {'whole ms':>10} {'split ms':>10} {'ratio':>7}")
def med(c, name):
    t = (c["results"].get(name) or {}).get("timing") or {}
    return t.get("median_ms")
same = [c["label"] for c in rw["cases"]] == [c["label"] for c in rs["cases"]]
for cw, cs in zip(rw["cases"], rs["cases"]):
    for name in ["reference"] + rw["implementations"]:
        a, b = med(cw, name), med(cs, name)
        if a and b:
            print(f"{cw['label']:24} {name:12} {a:10.4f} {b:10.4f} {b / a:7.3f}")
print("cases in the same order:", same)
PY
