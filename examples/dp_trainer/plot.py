#!/usr/bin/python3
"""Plots of a chorus-train run: loss curve and throughput per step (PNG).

usage: /usr/bin/python3 plot.py OUT_DIR [--compare NAME=metrics.csv ...]

OUT_DIR is chorus-train's --out (metrics.csv, report.json); each --compare adds another
run's metrics.csv (for example PyTorch DDP's from perf/trainer/ddp_reference.py) to the
loss plot. Needs Debian's python3-matplotlib (run with /usr/bin/python3).
"""
import argparse
import csv
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_metrics(path):
    """step -> row; a step redone after a restart keeps the last row written."""
    rows = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            rows[int(row["step"])] = row
    return [rows[s] for s in sorted(rows)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--compare", action="append", default=[], metavar="NAME=CSV")
    a = p.parse_args()
    rows = read_metrics(os.path.join(a.out, "metrics.csv"))
    report = {}
    if os.path.exists(os.path.join(a.out, "report.json")):
        with open(os.path.join(a.out, "report.json")) as f:
            report = json.load(f)
    batch = report.get("global_batch", 0)

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([int(r["step"]) for r in rows], [float(r["loss"]) for r in rows], label="chorus-train")
    for item in a.compare:
        name, path = item.split("=", 1)
        other = read_metrics(path)
        ax.plot([int(r["step"]) for r in other], [float(r["loss"]) for r in other], "--", label=name)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (mean over ranks)")
    ax.set_yscale("log")
    ax.legend()
    ax.set_title("loss")
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "loss.png"), dpi=120)

    fig, ax = plt.subplots(figsize=(7, 4))
    steps = [int(r["step"]) for r in rows]
    secs = [float(r["step_seconds"]) for r in rows]
    values = [batch / s for s in secs] if batch else [s * 1e3 for s in secs]
    ax.plot(steps, values, alpha=0.35, label="per step")
    window = 15  # a running median: single steps are noisy on shared cores
    smooth = [sorted(values[max(0, i - window + 1): i + 1])[len(values[max(0, i - window + 1): i + 1]) // 2]
              for i in range(len(values))]
    ax.plot(steps, smooth, label=f"median of {window}")
    ax.set_ylabel("samples/s" if batch else "step time (ms)")
    restarts = sorted({int(r["restart"]) for r in rows})
    for k in restarts[1:]:
        first = min(int(r["step"]) for r in rows if int(r["restart"]) == k)
        ax.axvline(first, color="red", linestyle=":", label=f"resumed (restart {k})")
    ax.set_xlabel("step")
    ax.set_title(f"throughput, {report.get('ranks', '?')} ranks")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "throughput.png"), dpi=120)
    print("wrote", os.path.join(a.out, "loss.png"), "and", os.path.join(a.out, "throughput.png"))


if __name__ == "__main__":
    main()
