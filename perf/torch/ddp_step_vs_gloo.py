#!/usr/bin/python3
"""DDP step time (forward, backward with overlapped bucket all-reduces, SGD step) for a
256-512-512-10 MLP, batch 64, on "chorus" vs gloo in the same processes, alternating
blocks of steps, median step time on rank 0.

    PYTHONPATH=build/python /usr/bin/python3 perf/torch/ddp_step_vs_gloo.py -n 4
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def worker(blocks, steps):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    import chorus.torch  # noqa: F401
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://")
    rank = dist.get_rank()
    groups = {"gloo": dist.group.WORLD, "chorus": dist.new_group(backend="chorus")}
    nets, opts = {}, {}
    for name, g in groups.items():
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                  torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                  torch.nn.Linear(512, 10))
        nets[name] = DDP(net, process_group=g)
        opts[name] = torch.optim.SGD(nets[name].parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(rank)
    x, y = torch.randn(64, 256, generator=gen), torch.randint(0, 10, (64,), generator=gen)

    def step(name):
        opts[name].zero_grad()
        torch.nn.functional.cross_entropy(nets[name](x), y).backward()
        opts[name].step()

    for name in groups:
        for _ in range(5):
            step(name)
    times = {"gloo": [], "chorus": []}
    for b in range(blocks):
        for name in (["chorus", "gloo"] if b % 2 == 0 else ["gloo", "chorus"]):
            dist.barrier(group=groups["gloo"])
            for _ in range(steps):
                start = time.perf_counter()
                step(name)
                times[name].append((time.perf_counter() - start) * 1e3)
    if rank == 0:
        c, g = statistics.median(times["chorus"]), statistics.median(times["gloo"])
        params = sum(p.numel() for p in nets["gloo"].parameters())
        print(f"# DDP step, MLP 256-512-512-10 ({params} parameters), batch 64, "
              f"{dist.get_world_size()} ranks, median of {blocks * steps} steps each")
        print(f"chorus {c:.2f} ms  gloo {g:.2f} ms  gloo/chorus {g / c:.2f}")
    dist.destroy_process_group(groups["chorus"])
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=4)
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--steps", type=int, default=20)
    a = ap.parse_args()
    if "RANK" in os.environ:
        return worker(a.blocks, a.steps)
    launch = os.path.join(HERE, "..", "..", "tests", "torch", "launch.py")
    return subprocess.call([sys.executable, launch, "-n", str(a.n), "--timeout", "3000",
                            os.path.abspath(__file__), "--blocks", str(a.blocks),
                            "--steps", str(a.steps)])


if __name__ == "__main__":
    sys.exit(main())
