"""Drives the runner's Python harness directly over its fd 3/4 protocol (a standalone check).

    cd experiments
    python3 flash-attention-wmma/standalone-check/drive_harness.py EXPERIMENT_DIR \
        [cpu|cuda] ['[{"T": 512}, {"B": 8}]']

For each implementation (on the CPU, skipping those with `requires`; on a GPU, skipping the
reference) it starts one harness worker (runner/harness/harness.py of this checkout, the
launcher of the xrun_harness package beside it), then for each case of the spec's sweep (the
cpu_sweep on the CPU; the optional JSON list keeps only the cases matching one of its
filters) asks for the models, a correctness check on seeds 1 and 2, and one timing batch,
and prints one line. Its commands carry every field runner/harness/PROTOCOL.md requires,
with the runner's values (init: flush true). This is not the runner: no interleaved rounds,
no stopping rule, no results.json. It was used to check the experiments' Python contract on
the CPU and on an H100 before the runner existed.
"""

import json
import os
import statistics
import subprocess
import sys

import yaml

HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "..", "..", "..", "runner", "harness", "harness.py")


def cases(bench, device, only):
    """The sweep's cases (params merged), filtered by `only`."""
    params = dict(bench.get("params", {}))
    sweep = bench["sweep"]
    if device == "cpu":
        params.update(bench.get("cpu_params", {}))
        sweep = bench.get("cpu_sweep", sweep)
    out = []
    for group in sweep if isinstance(sweep, list) else [sweep]:
        cs = [dict(params)]
        for key, values in group.items():
            cs = [dict(c, **{key: v}) for c in cs for v in values]
        out += cs
    if only:
        out = [c for c in out if any(all(c.get(k) == v for k, v in f.items()) for f in only)]
    return out


def tolerance(bench):
    """The spec's tolerance as the runner sends it: null for none, else both
    atol and rtol as numbers (the harness requires both; one the spec leaves
    out is 0). PyYAML reads 1e-3 as a string (YAML 1.1), the runner as a number."""
    t = bench.get("tolerance")
    return None if t is None else {k: float(t.get(k, 0.0)) for k in ("atol", "rtol")}


def run_impl(exp, bench, name, impl, device, todo, env):
    """One worker: init, then models, check and time per case."""
    cmd_r, cmd_w = os.pipe()
    ev_r, ev_w = os.pipe()
    proc = subprocess.Popen([sys.executable, "-u", HARNESS], cwd=exp, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, pass_fds=(cmd_r, ev_w),
                            env=dict(env, XRUN_CMD_FD=str(cmd_r), XRUN_EVENT_FD=str(ev_w)))
    os.close(cmd_r)
    os.close(ev_w)
    commands, events = os.fdopen(cmd_w, "w"), os.fdopen(ev_r)

    def ask(cmd):
        commands.write(json.dumps(cmd) + "\n")
        commands.flush()
        return json.loads(events.readline())

    models = {k: bench[k] for k in ("flops", "bytes", "tokens") if k in bench}
    ready = ask({"op": "init", "id": 1, "impl": name, "fn": impl["fn"], "reference": bench["reference"],
                 "inputs": bench["inputs"], "models": models, "device": device, "flush": True,
                 "impl_params": impl.get("params", {})})
    print(name, ready.get("event"), ready.get("message", ""), flush=True)
    for i, c in enumerate(todo if ready.get("event") == "ready" else []):
        m = ask({"op": "models", "id": 10 + i, "params": c})
        ck = ask({"op": "check", "id": 100 + i, "params": c, "seeds": [1, 2],
                  "tolerance": tolerance(bench)})
        tm = ask({"op": "time", "id": 200 + i, "params": c, "seed": 1, "min_samples": 10,
                  "max_samples": 200, "budget_ms": 300, "wall_ms": 1500, "warmup_ms": 100, "flush": True})
        med = statistics.median(tm["samples_ms"]) if tm.get("event") == "samples" else str(tm)[:300]
        shown = {k: v for k, v in c.items() if k in ("B", "T", "N", "D", "causal")}
        print("  ", shown, "gb", m.get("bytes"), "passed", ck.get("passed"), "max_abs", ck.get("max_abs_error"),
              ck.get("reason") or ck.get("message") or "", "median_ms", med, flush=True)
    commands.close()
    proc.wait()


def main():
    exp = sys.argv[1]
    device = sys.argv[2] if len(sys.argv) > 2 else "cpu"
    only = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None
    with open(os.path.join(exp, "xrun.yaml")) as f:
        spec = yaml.safe_load(f)
    bench = spec["benchmark"]
    includes = [os.path.abspath(os.path.join(exp, os.path.dirname(p.rstrip("/"))))
                for p in spec.get("include", [])]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.abspath(exp)] + includes))
    todo = cases(bench, device, only)
    impls = list(bench["implementations"].items())
    if device == "cpu":
        impls.append(("reference", bench["reference"]))
    for name, impl in impls:
        impl = {"fn": impl} if isinstance(impl, str) else impl
        if impl.get("requires") and device == "cpu":
            print(f"{name}: skipped (requires {impl['requires']})")
            continue
        run_impl(exp, bench, name, impl, device, todo, env)


if __name__ == "__main__":
    main()
