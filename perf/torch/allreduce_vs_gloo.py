#!/usr/bin/python3
"""all_reduce float32, 8 B .. 64 MiB: torch.distributed backend "chorus" vs gloo in the
same processes, alternating (chorus block, gloo block, ...), median of the blocks.

    PYTHONPATH=build/python /usr/bin/python3 perf/torch/allreduce_vs_gloo.py -n 4 [--reps 5]

Prints one row per size: median microseconds per all_reduce on rank 0 for each backend and
gloo/chorus (> 1: chorus faster). Debian's torch has no MPI backend to compare with.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = [8 << (3 * k) for k in range(9)]  # 8 B, 64 B, ..., 128 MiB -> capped below
SIZES = [s for s in SIZES if s <= 64 << 20] + [64 << 20]


def iterations(nbytes):
    return max(3, min(300, (32 << 20) // max(nbytes, 1 << 14)))


def worker(reps):
    import torch
    import torch.distributed as dist
    import chorus.torch  # noqa: F401
    dist.init_process_group("gloo", init_method="env://")
    groups = {"gloo": dist.group.WORLD, "chorus": dist.new_group(backend="chorus")}
    rank = dist.get_rank()
    rows = []
    for nbytes in sorted(set(SIZES)):
        x = torch.ones(max(1, nbytes // 4))
        iters = iterations(nbytes)
        times = {"gloo": [], "chorus": []}
        for name in ["chorus", "gloo"]:  # warm-up
            dist.all_reduce(x, group=groups[name])
        for rep in range(reps):
            for name in (["chorus", "gloo"] if rep % 2 == 0 else ["gloo", "chorus"]):
                g = groups[name]
                dist.barrier(group=groups["gloo"])
                start = time.perf_counter()
                for _ in range(iters):
                    dist.all_reduce(x, group=g)
                times[name].append((time.perf_counter() - start) / iters * 1e6)
        rows.append((nbytes, statistics.median(times["chorus"]), statistics.median(times["gloo"])))
    if rank == 0:
        print(f"# all_reduce float32, {dist.get_world_size()} ranks, median of {reps} alternating "
              f"blocks, us per call (rank 0)")
        print(f"{'bytes':>10} {'chorus_us':>11} {'gloo_us':>11} {'gloo/chorus':>12}")
        for nbytes, c, g in rows:
            print(f"{nbytes:>10} {c:>11.1f} {g:>11.1f} {g / c:>12.2f}")
        sys.stdout.flush()
    dist.destroy_process_group(groups["chorus"])
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=4)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    if "RANK" in os.environ:
        return worker(a.reps)
    launch = os.path.join(HERE, "..", "..", "tests", "torch", "launch.py")
    return subprocess.call([sys.executable, launch, "-n", str(a.n), "--timeout", "3000",
                            os.path.abspath(__file__), "--reps", str(a.reps)])


if __name__ == "__main__":
    sys.exit(main())
