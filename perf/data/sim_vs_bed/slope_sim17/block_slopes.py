#!/usr/bin/env python3
"""Estimators of the within-node o on this branch's bed logs (per-block round trips of 1, 4,
8 x 8 B): the committed rule (slope over the quietest-of-blocks fastest rounds), the median
over blocks of each block's own fastest-round slope, and the old two-point median difference
(quietest medians). Quartiles over the logs. Usage: block_slopes.py LOG..."""
import re, sys, statistics as st
def slope(pts):
    mk = sum(k for k, _ in pts) / len(pts); mt = sum(t for _, t in pts) / len(pts)
    return sum((k - mk) * (t - mt) for k, t in pts) / sum((k - mk) ** 2 for k, _ in pts)
pat = r"8 B ([0-9.]+) \(best ([0-9.]+)(, steady)?\), 4 x 8 B ([0-9.]+) \(best ([0-9.]+)\), 8 x 8 B ([0-9.]+) \(best ([0-9.]+)\)"
est = {"committed (quietest fastest)": [], "median of blocks' fastest slopes": [], "old (quietest medians, 2 points)": []}
for f in sys.argv[1:]:
    blocks = []
    for l in open(f):
        if l.startswith("[0]") and "probe block" in l:
            g = re.search(pat, l).groups()
            blocks.append([float(x) if x and x != ", steady" else x for x in g])
        if l.startswith("[0]") and "round trips (us)" in l:
            q = [float(x) if x and x != ", steady" else x for x in re.search(pat.replace("(, steady)?", "()"), l).groups()]
    half = min(q[0], q[5]) / 2
    b = slope([(1, q[1]), (4, q[4]), (8, q[6])])
    est["committed (quietest fastest)"].append(min(max(b, 0), (half - 0.05) / 2))
    m = st.median(slope([(1, x[1]), (4, x[4]), (8, x[6])]) for x in blocks)
    est["median of blocks' fastest slopes"].append(min(max(m, 0), (half - 0.05) / 2))
    est["old (quietest medians, 2 points)"].append(max(0, (q[5] - min(q[0], q[5])) / 7))
for k, v in est.items():
    v = sorted(v); n = len(v)
    print("%-36s n %2d  min %5.1f  q1 %5.1f  median %5.1f  q3 %5.1f  max %5.1f" % (k, n, v[0], v[n // 4], st.median(v), v[3 * n // 4], v[-1]))
