#!/usr/bin/env python3
"""Where a correctness check's wall time goes, on the GPU of this machine
(no Docker, no runner): a worker of the harness, in this process, checks
each implementation of an experiment on each case the way the runner asks
it to (three seeds), and each step of the check (making the inputs, the
clones, the reference, the poisoning, the call, the comparisons, the
digests) is timed, the GPU synchronised at its end.

    python3 scripts/gpu-host/check-cost.py EXPERIMENT_DIR --inputs REF --reference REF \
        --fn NAME=REF... --case JSON... [--json OUT]

for example, the softmax timing-validation experiment:

    python3 scripts/gpu-host/check-cost.py experiments/timing-validation/softmax \
        --inputs softmax:inputs --reference softmax:reference \
        --fn torch=softmax:torch_softmax --fn triton=softmax:triton_softmax --fn naive=softmax:naive_softmax \
        --case '{"shape":"2048x1024"}' --case '{"shape":"8192x2048"}' --case '{"shape":"32768x4096"}'

Run it from the repository root, with the python that has torch.
"""

import argparse
import collections
import json
import os
import sys
import time

sys.path.insert(0, "runner/harness")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("experiment")
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--reference", required=True)
    ap.add_argument("--fn", action="append", required=True, help="NAME=module:function")
    ap.add_argument("--case", action="append", required=True, help="the case's parameters, JSON")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu to try the script")
    ap.add_argument("--json")
    a = ap.parse_args()

    sys.path.insert(0, os.path.abspath(a.experiment))

    import torch
    from xrun_harness import correctness
    from xrun_harness.protocol import Check, Init
    from xrun_harness.worker import Worker

    steps = collections.defaultdict(float)
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)

    def timed(name, f):
        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return f(*args, **kwargs)
            finally:
                sync()
                steps[name] += time.perf_counter() - t
        return wrapper

    for name in ("clone", "poison", "bitwise_equal", "digest", "find_replay"):
        setattr(correctness, name, timed(name, getattr(correctness, name)))
    correctness.Stats.compare = timed("compare", correctness.Stats.compare)

    seeds = [int(s) for s in a.seeds.split(",")]
    out = []
    for impl, fn in (f.split("=", 1) for f in a.fn):
        w = Worker()
        t = time.perf_counter()
        w.handle(Init(impl=impl, device=a.device, flush=a.device == "cuda", fn=fn, reference=a.reference, inputs=a.inputs,
                      kernel_clock=a.device == "cuda"))
        init_s = time.perf_counter() - t
        code = w.code
        code.make_inputs = timed("inputs", code.make_inputs)
        code.call_reference = timed("reference", code.call_reference)
        code.call_fn = timed("fn", code.call_fn)
        for case in a.case:
            steps.clear()
            t = time.perf_counter()
            ev = w.handle(Check(params=json.loads(case), seeds=seeds, tolerance=None))
            wall = time.perf_counter() - t
            row = {"impl": impl, "case": case, "passed": ev.passed, "wall_s": round(wall, 4),
                   "init_s": round(init_s, 3), "steps_s": {k: round(v, 4) for k, v in steps.items()}}
            out.append(row)
            print(json.dumps(row), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
