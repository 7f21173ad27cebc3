#!/usr/bin/env python3
"""auto against its pick's own forced column, over the logs of perf/tuner_accuracy.sh runs.

  perf/tuner_pairs.py /tmp/chorus-tuner.*/np*.log

Per rank count and size range: the ratio auto / (the picked algorithm's forced column),
split by whether that column was the best fixed one, next to the same schedule's copies
(hier* against ring: on one node the hier* run the ring). auto and its pick run the same
schedule, so without a per-call cost of auto the ratio is noise; the best fixed column is
the largest of several noisy medians, so where the pick's column is the best it is the
luckiest draw and auto/pick falls below 1 (and above 1 where another column won), as
hier/ring does where the ring is the best (perf/README.md, tuner11).
"""
import math
import statistics
import sys


def rows_of(path):
    names = None
    np_ = path.rsplit("np", 1)[-1].split(".")[0]
    for line in open(path):
        s = line.split()
        if line.lstrip().startswith("size ") and "auto" in s:
            names = s
            continue
        if names and s and s[0].isdigit() and len(s) == len(names):
            vals = {n: float(v.rstrip("*")) for n, v in zip(names[1:-2], s[1:-2])}
            fixed = {n: v for n, v in vals.items() if n != "auto" and not n.startswith("hier")}
            yield np_, int(s[0]), s[-2], max(fixed, key=fixed.get), vals


def summary(xs):
    if not xs:
        return "n=0"
    xs = sorted(xs)
    return "n=%d median %.3f geomean %.3f 10%%-90%% %.2f-%.2f below 0.9: %d" % (
        len(xs), xs[len(xs) // 2], math.exp(statistics.mean(math.log(x) for x in xs)),
        xs[len(xs) // 10], xs[(9 * len(xs)) // 10], sum(x < 0.9 for x in xs))


rows = [r for path in sys.argv[1:] for r in rows_of(path)]
for np_ in sorted({r[0] for r in rows}):
    for lo, hi in ((512, 32 << 10), (256 << 10, 1 << 40)):
        sel = [r for r in rows if r[0] == np_ and lo <= r[1] <= hi]
        pair = lambda r: r[4]["auto"] / r[4][r[2]]
        print("np %s, %d B to %s:" % (np_, lo, "32 KiB" if hi == 32 << 10 else "16 MiB"))
        print("  auto/pick, pick the best:    ", summary([pair(r) for r in sel if r[2] in r[4] and r[2] == r[3] and r[4][r[2]] > 0]))
        print("  auto/pick, pick not the best:", summary([pair(r) for r in sel if r[2] in r[4] and r[2] != r[3] and r[4][r[2]] > 0]))
        print("  hier*/ring, every row:       ", summary([r[4][h] / r[4]["ring"] for r in sel for h in r[4] if h.startswith("hier") and r[4]["ring"] > 0]))
        print("  hier/ring, ring the best:    ", summary([r[4]["hier"] / r[4]["ring"] for r in sel if r[3] == "ring" and "hier" in r[4] and r[4]["ring"] > 0]))
