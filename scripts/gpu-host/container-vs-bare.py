#!/usr/bin/env python3
"""Container medians against bare-runner medians, per case and implementation.

  container-vs-bare.py BARE/results.json CONTAINER/results.json [LABEL]

Prints a markdown table: both medians, the difference, each run's own spread
(its q1-q3 range over the median), and whether the difference is within 3 %
and within the spread (the two q1-q3 ranges overlap), then a summary line.
Timings that either run did not finish (crashed, skipped) are listed as such.
"""
import json
import sys


def timings(path):
    r = json.load(open(path))
    out = {}
    for c in r["cases"]:
        for impl, ir in c["results"].items():
            t = ir.get("timing")
            out[(c["label"], impl)] = (ir["status"], t)
    return r, out


def main(bare_path, cont_path, label=""):
    bare_r, bare = timings(bare_path)
    cont_r, cont = timings(cont_path)
    rows, diffs, within3, overlap, missing = [], [], 0, 0, []
    for key in bare:
        if key not in cont:
            continue
        (bs, bt), (cs, ct) = bare[key], cont[key]
        if not bt or not ct or "median_ms" not in bt or "median_ms" not in ct:
            missing.append("%s %s (bare %s, container %s)" % (key[0], key[1], bs, cs))
            continue
        b, c = bt["median_ms"], ct["median_ms"]
        d = (c - b) / b * 100
        bspread = (bt["q3_ms"] - bt["q1_ms"]) / b * 100
        cspread = (ct["q3_ms"] - ct["q1_ms"]) / c * 100
        ok3 = abs(d) <= 3
        ov = ct["q1_ms"] <= bt["q3_ms"] and bt["q1_ms"] <= ct["q3_ms"]
        within3 += ok3
        overlap += ov
        diffs.append(d)
        rows.append("| %s | %s | %.4g | %.4g | %+.1f%% | %.1f%% | %.1f%% | %s | %s |" % (
            key[0], key[1], b, c, d, bspread, cspread, "yes" if ok3 else "**no**", "yes" if ov else "no"))
    gb = bare_r["env"]["gpus"][0] if bare_r["env"].get("gpus") else {}
    gc = cont_r["env"]["gpus"][0] if cont_r["env"].get("gpus") else {}
    print("%s: bare `%s` (GPU %s) vs container `%s` (GPU %s, image %s)\n" % (
        label or cont_r["experiment"], bare_path, gb.get("uuid", "?")[:12], cont_path, gc.get("uuid", "?")[:12],
        (cont_r.get("image") or {}).get("digest", "-")[:19]))
    print("| case | impl | bare ms | container ms | diff | bare q1-q3 | container q1-q3 | within 3 % | ranges overlap |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if diffs:
        s = sorted(diffs)
        print("\n%d timings: median difference %+.1f%%, range %+.1f%% to %+.1f%%; %d within 3 %%, %d with overlapping q1-q3 ranges." % (
            len(s), s[len(s) // 2], s[0], s[-1], within3, overlap))
    for m in missing:
        print("- not compared: %s" % m)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(*sys.argv[1:4])
