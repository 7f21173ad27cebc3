#!/usr/bin/python3
"""Busbw and latency against message size, one line per run, with the memory-bandwidth
limit, from chorus-perf's and compare_mpi's output (both write the same JSON with -J;
their printed nccl-tests tables work too). Several files under one label (repeated runs)
are reduced to the median per size.

  /usr/bin/python3 perf/plot.py -o allreduce.png --np 4 --memcpy 19 \\
      "Open MPI=mpi.*.json" "Chorus=chorus.*.json" "Chorus -R 2=r2.*.json"

Debian's matplotlib only loads under /usr/bin/python3. --memcpy is the measured memcpy
rate in GB/s (e.g. perf/kernels_bench); the limit drawn is what all-reduce can reach when
every byte is read from memory once per rank: algbw <= memcpy / n, busbw = algbw*2(n-1)/n.
"""
import argparse
import glob
import json
import statistics
import sys


def rows_of(path):
    """(size, time_us, busbw) per out-of-place row."""
    with open(path) as f:
        text = f.read()
    if text.lstrip().startswith("{"):
        data = json.loads(text)
        return [(r["size"], r["out_of_place"]["time"], r["out_of_place"]["bus_bw"])
                for r in data["results"]]
    rows = []
    for line in text.splitlines():  # size count type redop root time algbw busbw #wrong ...
        parts = line.split()
        if line.startswith("#") or len(parts) < 9 or not parts[0].isdigit():
            continue
        try:
            rows.append((int(parts[0]), float(parts[5]), float(parts[7])))
        except ValueError:
            continue
    return rows


def medians(paths):
    by_size = {}
    for path in paths:
        for size, us, bw in rows_of(path):
            by_size.setdefault(size, []).append((us, bw))
    sizes = sorted(by_size)
    return (sizes, [statistics.median(u for u, _ in by_size[s]) for s in sizes],
            [statistics.median(b for _, b in by_size[s]) for s in sizes])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--output", default="perf.png")
    p.add_argument("--np", type=int, default=4, help="ranks (for the limit line)")
    p.add_argument("--memcpy", type=float, default=0, help="memcpy GB/s; 0: no limit line")
    p.add_argument("--title", default="all-reduce, float sum")
    p.add_argument("runs", nargs="+", help="LABEL=GLOB (chorus-perf / compare_mpi output)")
    a = p.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (bw_ax, lat_ax) = plt.subplots(1, 2, figsize=(12, 4.5))
    all_sizes = set()
    for run in a.runs:
        label, _, pattern = run.partition("=")
        paths = sorted(glob.glob(pattern))
        if not paths:
            sys.exit(f"plot.py: no file matches {pattern!r} ({label})")
        sizes, times, bws = medians(paths)
        all_sizes.update(sizes)
        bw_ax.plot(sizes, bws, marker="o", markersize=3, label=f"{label} ({len(paths)} runs)")
        lat_ax.plot(sizes, times, marker="o", markersize=3, label=label)
    if a.memcpy > 0 and all_sizes:
        n = a.np
        limit = a.memcpy / n * 2 * (n - 1) / n
        bw_ax.axhline(limit, color="black", linestyle="--",
                      label=f"memory limit {limit:.1f} GB/s (memcpy {a.memcpy:g}/n)")
        s = sorted(all_sizes)
        lat_ax.plot(s, [x / (a.memcpy / n) / 1e3 for x in s], "k--", label="memory limit")
    for ax, ylabel in ((bw_ax, "busbw (GB/s)"), (lat_ax, "time (us)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    lat_ax.set_yscale("log")
    fig.suptitle(f"{a.title}, {a.np} ranks (medians)")
    fig.tight_layout()
    fig.savefig(a.output, dpi=120)
    print(f"plot.py: wrote {a.output}")


if __name__ == "__main__":
    main()
