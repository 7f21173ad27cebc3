#!/usr/bin/env python3
"""Spread of the probe's L / o over many bed probes (split.py's figures): per build, and
the old formula on this branch's own probe times. Usage: spread.py DIR"""
import subprocess, sys, re, statistics as st, glob, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
d = sys.argv[1]
out = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "split.py")] + sorted(glob.glob(d + "/*.log")), capture_output=True, text=True).stdout
series = {}
def add(k, v): series.setdefault(k, []).append(v)
for line in out.splitlines():
    if line.startswith("    "): continue
    build = "main" if "main_" in line else "sim17"
    m = re.findall(r"L +([0-9.]+) o +([0-9.]+)", line)
    ms = float(re.search(r"([0-9.]+) ms", line).group(1))
    add(build + " probe ms", ms)
    names = ["within", "between", "old within", "old between"]
    for n, (L, o) in zip(names, m):
        key = ("sim17 (old formula) " + n[4:]) if n.startswith("old") else build + " " + n
        add(key + " o", float(o)); add(key + " L", float(L))
        add(key + " L=floor", float(L) <= 0.05)
def q(v):
    v = sorted(v); n = len(v)
    return v[0], v[n // 4], st.median(v), v[(3 * n) // 4], v[-1]
print("%-34s %4s %8s %8s %8s %8s %8s" % ("figure", "n", "min", "q1", "median", "q3", "max"))
for k in sorted(series):
    v = series[k]
    if k.endswith("L=floor"):
        print("%-34s %4d  L at its floor in %d" % (k, len(v), sum(v))); continue
    print("%-34s %4d %8.2f %8.2f %8.2f %8.2f %8.2f" % ((k, len(v)) + q(v)))
