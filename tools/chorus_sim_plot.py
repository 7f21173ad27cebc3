#!/usr/bin/python3
"""Plots from chorus-sim (Debian's matplotlib: run with /usr/bin/python3).

  tools/chorus_sim_plot.py busbw     --sim build/tools/chorus-sim --fabric dgx-h100 --gpus 16384 -o busbw.png
  tools/chorus_sim_plot.py crossover --sim build/tools/chorus-sim --fabric meta-roce -o crossover.png \
        [--gpus 64,256,1024,4096,16384]

busbw: bus bandwidth vs size, one line per all-reduce algorithm, at one cluster size.
crossover: as the cluster grows, the largest size at which recursive doubling or
halving-doubling still beats the ring (the ring wins above it; none: never in range).
Every point comes from chorus-sim's --csv rows; the CSV is kept next to the PNG. With
--from-csv the rows are read from CSVs chorus-sim wrote earlier (busbw: one file;
crossover: one per cluster size, comma-separated) instead of running it. The series
plotted are also stored in the PNG (a tEXt chunk, key "chorus-sim series", JSON), so a
reader (and tests/sim/plot_test.py) can tell what the picture shows.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def run_sim(sim, fabric, gpus, algos, lo, hi, factor, csv_path, extra):
    cmd = [sim, "--fabric", fabric, "--gpus", str(gpus), "-b", lo, "-e", hi, "-f", str(factor),
           "--csv", csv_path] + (["-A", algos] if algos else []) + extra
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit("chorus-sim failed (%d): %s" % (done.returncode, done.stderr.strip()))
    with open(csv_path) as f:
        return list(csv.DictReader(f))


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def save(output, series):
    """The figure, with the plotted series in the PNG's metadata."""
    plt.savefig(output, dpi=120, bbox_inches="tight",
                metadata={"chorus-sim series": json.dumps(series, sort_keys=True)})
    print(output)


def busbw(args):
    if args.from_csv:
        rows = read_csv(args.from_csv)
    else:
        rows = run_sim(args.sim, args.fabric, args.gpus, args.algos, "64K", "1G", 4,
                       os.path.splitext(args.output)[0] + ".csv", args.extra)
    if not rows:
        sys.exit("no rows to plot")
    series = {}
    plt.figure(figsize=(8, 5))
    for algo in sorted({r["algorithm"] for r in rows}):
        pts = sorted((int(r["bytes"]), float(r["busbw"])) for r in rows if r["algorithm"] == algo)
        series[algo] = [list(p) for p in pts]
        plt.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=algo)
    plt.xscale("log", base=2)
    plt.xlabel("all-reduce size (bytes)")
    plt.ylabel("simulated busbw (GB/s)")
    plt.title("chorus-sim: %s, %s GPUs" % (rows[0]["fabric"], rows[0]["ranks"]))
    plt.grid(True, which="both", alpha=0.3)
    plt.legend()
    save(args.output, series)


def crossover(args):
    sizes, points = [], []
    stem = os.path.splitext(args.output)[0]
    inputs = args.from_csv.split(",") if args.from_csv else args.gpus.split(",")
    for given in inputs:
        if args.from_csv:
            rows, gpus = read_csv(given), 0
        else:
            gpus = int(given)
            rows = run_sim(args.sim, args.fabric, gpus, "ring,rd,rhd", "4K", "1G", 4,
                           "%s_%d.csv" % (stem, gpus), args.extra)
        by_size = {}
        for r in rows:
            by_size.setdefault(int(r["bytes"]), {})[r["algorithm"]] = float(r["us"])
        beats = [b for b, t in by_size.items()
                 if "ring" in t and min(t.get("rd", 1e300), t.get("rhd", 1e300)) < t["ring"]]
        sizes.append(int(rows[0]["ranks"]) if rows else gpus)
        points.append(max(beats) if beats else None)
        print("%7d GPUs: rd/rhd beat ring up to %s bytes" % (sizes[-1], points[-1]))
    plt.figure(figsize=(8, 5))
    xs = [s for s, p in zip(sizes, points) if p]
    ys = [p for p in points if p]
    plt.plot(xs, ys, marker="o", label="largest size where rd/rhd beats ring")
    plt.xscale("log", base=2)
    plt.yscale("log", base=2)
    plt.xlabel("GPUs")
    plt.ylabel("all-reduce size (bytes)")
    plt.title("chorus-sim: ring vs recursive doubling/halving crossover, %s" % args.fabric)
    plt.grid(True, which="both", alpha=0.3)
    plt.legend()
    save(args.output, {"crossover": [[x, y] for x, y in zip(xs, ys)]})


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("plot", choices=["busbw", "crossover"])
    p.add_argument("--sim", default="build/tools/chorus-sim")
    p.add_argument("--fabric", default="dgx-h100")
    p.add_argument("--gpus", default=None)
    p.add_argument("--algos", default="ring,rd,rhd,hier,hier_rd,hier_rhd")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--from-csv", default=None, help="plot these chorus-sim CSVs, run nothing")
    p.add_argument("extra", nargs="*", help="more chorus-sim options (after --)")
    args = p.parse_args()
    if args.plot == "busbw":
        args.gpus = args.gpus or "1024"
        busbw(args)
    else:
        args.gpus = args.gpus or "16,64,256,1024,4096,16384"
        crossover(args)


if __name__ == "__main__":
    main()
