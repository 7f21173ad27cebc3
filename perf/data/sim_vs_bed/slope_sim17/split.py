#!/usr/bin/env python3
"""Per bed log: the probe's L / o within and between nodes (the tune lines), the old
two-point formula on the same probe times where the log has them (this branch's logs:
round trips of 1, 4, 8 x 8 B), and what the probe cost. Usage: split.py LOG..."""
import re, sys, statistics as st

def num(key, line):
    m = re.search(key + r"=([0-9.e+-]+)", line)
    return float(m.group(1)) if m else None

def old(one, burst):  # linkFromProbe before: o = (burst - one) / 7, L = max(0.05, half - 2 o)
    one = min(one, burst)
    o = max(0.0, (burst - one) / 7)
    return max(0.05, one / 2 - 2 * o), o

rows = []
for path in sys.argv[1:]:
    txt = open(path).read().splitlines()
    r = {"log": path}
    for l in txt:
        if not l.startswith("[0]"):
            continue
        if "tuning (probe):" in l:
            r["w"] = (num("latency_us", l), num("overhead_us", l))
        elif "tuning between nodes (" in l:
            r["b"] = (num("latency_us", l), num("overhead_us", l))
        elif "tuning probe took" in l:
            r["ms"] = float(re.search(r"took ([0-9.]+) ms", l).group(1))
        elif "tuning probe round trips" in l:
            m = re.search(r"8 B ([0-9.]+) \(best ([0-9.]+)\), 4 x 8 B ([0-9.]+) \(best ([0-9.]+)\), 8 x 8 B ([0-9.]+) \(best ([0-9.]+)\)", l)
            if m: r["wt"] = [float(x) for x in m.groups()]
        elif "tuning probe between nodes (us)" in l:
            m = re.search(r"8 B ([0-9.]+) \(best ([0-9.]+)\), 4 x 8 B ([0-9.]+) \(best ([0-9.]+)\), 8 x 8 B ([0-9.]+) \(best ([0-9.]+)\)", l)
            if m: r["bt"] = [float(x) for x in m.groups()]
            r["bnote"] = l.split("; ", 1)[1] if "; " in l else ""
        elif "tuning probe within a node:" in l:
            r["wnote"] = l.split("a node: ", 1)[1]
    rows.append(r)

def fmt(p):
    return "L %6.2f o %6.2f" % p if p else "-"
for r in rows:
    line = "%-40s %7.1f ms  within %s  between %s" % (r["log"][-40:], r.get("ms", 0), fmt(r.get("w")), fmt(r.get("b")))
    if "wt" in r:
        line += "  | old formula: within %s between %s" % (fmt(old(r["wt"][0], r["wt"][4])), fmt(old(r["bt"][0], r["bt"][4])) if "bt" in r else "-")
    print(line)
    for k in ("wnote", "bnote"):
        if k in r: print("    %s: %s" % (k, r[k]))
