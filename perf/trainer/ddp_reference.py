#!/usr/bin/python3
"""The chorus-train MLP in PyTorch DDP (gloo), for loss curve and throughput comparison.

Same model, data, split, sample order, initial weights (chorus-train --dump-init) and
hyper-parameters as chorus-train; one intra-op thread per rank like chorus-train --threads 1.
Debian's torchrun fails on Python 3.11, so this starts the ranks itself with MASTER_ADDR,
MASTER_PORT, RANK and WORLD_SIZE.

usage: /usr/bin/python3 ddp_reference.py --ranks 4 --init init.bin --out DIR
         [--hidden 1024 --layers 3 --batch 64 --steps 200 --lr 1e-3 --warmup 0
          --decay cosine --min-lr-ratio 0.1 --bucket-mb 1 --seed 1]
Writes DIR/metrics.csv (step, loss averaged over ranks, step seconds) and prints samples/s.
"""
import argparse
import csv
import gzip
import math
import os
import socket
import subprocess
import sys
import time

DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
MASK = (1 << 64) - 1


class SplitMix64:
    """examples/dp_trainer/rng.hpp, bit for bit."""

    def __init__(self, state):
        self.state = state & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n):
        return self.next() % n


def shuffle(order, rng):
    for i in range(len(order) - 1, 0, -1):
        j = rng.below(i + 1)
        order[i], order[j] = order[j], order[i]


def load_split(seed, test_fraction):
    """digits.cpp: loadDigits + splitHeldOut."""
    rows = [list(map(int, line.split(","))) for line in gzip.open(DIGITS, "rt") if line.strip()]
    order = list(range(len(rows)))
    shuffle(order, SplitMix64(seed ^ 0x5EEDDA7A))
    n_test = int(len(rows) * test_fraction)
    train = [rows[i] for i in order[: len(rows) - n_test]]
    return [[v / 16.0 for v in r[:-1]] for r in train], [r[-1] for r in train]


class Sampler:
    """digits.cpp: Sampler."""

    def __init__(self, n, seed):
        self.order = list(range(n))
        self.rng = SplitMix64(seed)
        shuffle(self.order, self.rng)
        self.cursor = 0

    def next_batch(self, size):
        out = []
        while len(out) < size:
            if self.cursor == len(self.order):
                shuffle(self.order, self.rng)
                self.cursor = 0
            out.append(self.order[self.cursor])
            self.cursor += 1
        return out


def lr_at(a, step):
    """optimizer.cpp: Optimizer::lrAt."""
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    if a.decay == "none":
        return a.lr
    t = min(1.0, (step - a.warmup) / max(1, a.steps - a.warmup))
    shape = 0.5 * (1 + math.cos(math.pi * t)) if a.decay == "cosine" else 1 - t
    return a.lr * (a.min_lr_ratio + (1 - a.min_lr_ratio) * shape)


def rank_main(a):
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    xs, ys = load_split(a.seed, a.test_fraction)
    x_all = torch.tensor(xs, dtype=torch.float32)
    y_all = torch.tensor(ys, dtype=torch.long)
    sizes = [x_all.shape[1]] + [a.hidden] * a.layers + [10]
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers)
    # chorus-train's flat layout: per layer W (out x in) then b.
    flat = torch.from_file(a.init, size=sum(p.numel() for p in model.parameters()), dtype=torch.float32)
    offset = 0
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(flat[offset: offset + p.numel()].view_as(p))
            offset += p.numel()
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=a.bucket_mb)
    opt = torch.optim.AdamW(ddp.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_at(a, s) / a.lr)
    loss_fn = nn.CrossEntropyLoss()
    sampler = Sampler(len(ys), a.seed ^ 0xDA7A)
    rows = []
    dist.barrier()
    start = time.perf_counter()
    for step in range(a.steps):
        t0 = time.perf_counter()
        idx = sampler.next_batch(a.batch * world)[rank * a.batch: (rank + 1) * a.batch]
        x, y = x_all[idx], y_all[idx]
        loss = loss_fn(ddp(x), y)
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
        sched.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)  # the loss over ranks, for the curve (chorus-train gets it in a bucket)
        rows.append((step + 1, mean.item() / world, time.perf_counter() - t0))
    seconds = time.perf_counter() - start
    if rank == 0:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "metrics.csv"), "w") as f:
            w = csv.writer(f)
            w.writerow(["restart", "step", "loss", "lr", "step_seconds", "held_out"])
            for s, l, t in rows:
                w.writerow([0, s, f"{l:.6f}", "", f"{t:.6f}", ""])
        print(f"ddp-gloo: {world} ranks, {a.steps} steps, samples/s {a.steps * a.batch * world / seconds:.1f}")
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--init", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--decay", default="cosine")
    p.add_argument("--min-lr-ratio", type=float, default=0.1)
    p.add_argument("--bucket-mb", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--test-fraction", type=float, default=0.2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.rank >= 0:
        rank_main(a)
        return
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(a.ranks):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(r),
                   WORLD_SIZE=str(a.ranks), LOCAL_RANK=str(r), OMP_NUM_THREADS=str(a.threads))
        procs.append(subprocess.Popen([sys.executable, __file__] + sys.argv[1:] + ["--rank", str(r)], env=env))
    codes = [p.wait() for p in procs]
    sys.exit(max(codes))


if __name__ == "__main__":
    main()
