#!/usr/bin/env python3
"""Prints every timing of one results.json (on stdin) as a medians.tsv
line: the given labels (the setting or binary, the round, the experiment),
then the case, the implementation, the median, the samples, the relative
standard error and whether it converged.

    xrun results --json JOB | python3 scripts/gpu-host/medians.py LABEL...
"""

import json
import sys

HEADER = "case\timpl\tmedian_ms\tsamples\trse\tconverged"


def main():
    r = json.load(sys.stdin)
    for c in r.get("cases", []):
        for name, i in sorted(c.get("results", {}).items()):
            t = i.get("timing") or {}
            if t:
                print("\t".join(map(str, sys.argv[1:] + [c.get("label"), name, t.get("median_ms"), t.get("samples"),
                                                        t.get("stderr_rel"), t.get("converged")])))


if __name__ == "__main__":
    main()
