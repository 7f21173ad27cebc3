#!/usr/bin/env python3
"""all_reduce float32 on host memory: PyTorch's gloo against chorus-perf, in alternating
runs on the same machine, for machines whose torch is not Debian's (there the chorus torch
backend, built against Debian's libtorch, does not load, so allreduce_vs_gloo.py cannot run;
this compares processes instead of backends in one process).

    python3 perf/torch/gloo_vs_chorus_perf.py --bin build/tools --perf build/perf/chorus-perf \
        -n "2 4 8" --reps 3

For each rank count: reps rounds, each a gloo run then a chorus-perf run (the order
alternates by round). gloo: per size, a block of all_reduce calls (in place, like
chorus-perf's in-place column), time per call on rank 0. chorus-perf: its in-place time
(average over ranks, -a 1). One row per size: the medians and gloo/chorus (> 1: Chorus
faster). Exit status 0 unless a run failed.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

SIZES = [8 << (3 * k) for k in range(8)] + [64 << 20]  # 8 B, 64 B, ..., 16 MiB, 64 MiB


def iterations(nbytes):
    return max(5, min(500, (64 << 20) // max(nbytes, 1 << 14)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gloo_worker(rank, world, port, result_path):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    times = {}
    for nbytes in SIZES:
        x = torch.ones(max(1, nbytes // 4))
        iters = iterations(nbytes)
        for _ in range(2):
            dist.all_reduce(x)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        times[nbytes] = (time.perf_counter() - start) / iters * 1e6
        # the timed tensor's values overflow (summed again and again): check a fresh one
        y = torch.full((max(1, nbytes // 4),), float(rank + 1))
        dist.all_reduce(y)
        if y[0].item() != world * (world + 1) / 2 or y[-1].item() != world * (world + 1) / 2:
            raise SystemExit(f"gloo rank {rank}: wrong sum at {nbytes} B")
    if rank == 0:
        with open(result_path, "w") as f:
            json.dump(times, f)
    dist.destroy_process_group()


def run_gloo(world, result_path):
    import torch.multiprocessing as mp
    port = free_port()
    mp.spawn(gloo_worker, args=(world, port, result_path), nprocs=world, join=True)
    with open(result_path) as f:
        return {int(k): v for k, v in json.load(f).items()}


def run_chorus(run, perf, world, json_path):
    times = {}
    for lo, hi, factor in [(8, 16 << 20, 8), (64 << 20, 64 << 20, 2)]:
        cmd = [run, "-n", str(world), "--timeout", "120", perf, "-b", str(lo), "-e", str(hi),
               "-f", str(factor), "-J", json_path]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                       timeout=150)
        with open(json_path) as f:
            for row in json.load(f)["results"]:
                if row["in_place"]["nwrong"] or row["out_of_place"]["nwrong"]:
                    raise SystemExit(f"chorus-perf: wrong results at {row['size']} B")
                times[row["size"]] = row["in_place"]["time"]
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="directory with chorus-run")
    ap.add_argument("--perf", required=True, help="chorus-perf executable")
    ap.add_argument("-n", default="2 4", help="rank counts, space-separated")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    run = os.path.join(a.bin, "chorus-run")
    tmp = tempfile.mkdtemp(prefix="gloo-vs-chorus-")
    for world in [int(w) for w in a.n.split()]:
        samples = {"gloo": {s: [] for s in SIZES}, "chorus": {s: [] for s in SIZES}}
        for rep in range(a.reps):
            for name in (["gloo", "chorus"] if rep % 2 == 0 else ["chorus", "gloo"]):
                t = (run_gloo(world, f"{tmp}/gloo.json") if name == "gloo" else
                     run_chorus(run, a.perf, world, f"{tmp}/chorus.json"))
                for s in SIZES:
                    samples[name][s].append(t[s])
        print(f"# all_reduce float32 in place, {world} ranks, {os.cpu_count()} cores, median of "
              f"{a.reps} alternating runs, us per call")
        print(f"{'bytes':>10} {'chorus_us':>11} {'gloo_us':>11} {'gloo/chorus':>12}")
        for s in SIZES:
            c = statistics.median(samples["chorus"][s])
            g = statistics.median(samples["gloo"][s])
            print(f"{s:>10} {c:>11.2f} {g:>11.2f} {g / c:>12.2f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
