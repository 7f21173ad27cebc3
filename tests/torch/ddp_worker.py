"""DistributedDataParallel on "chorus" (the default group, through env://, tcp:// or
file://) side by side with the same model on a gloo group: 20 SGD steps on 4 ranks, small
buckets so that several all-reduces overlap the backward pass. The parameters must match
gloo's to float32 rounding (the two sum in different orders) and be bitwise identical
on every rank."""
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from common import Checks, init

STEPS = 20


def model():
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                               torch.nn.ReLU(), torch.nn.Linear(64, 10))


def train(group, rank):
    net = DDP(model(), process_group=group, bucket_cap_mb=0.004)  # ~1000 floats a bucket
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(100 + rank)  # each rank its own batches
    for _ in range(STEPS):
        x = torch.randn(16, 32, generator=gen)
        y = torch.randint(0, 10, (16,), generator=gen)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in net.parameters()])


def main():
    rank, size = init("chorus")
    gloo = dist.new_group(backend="gloo")
    c = Checks(rank)
    c.true("default group is chorus", dist.get_backend() == "chorus")
    mine = train(dist.group.WORLD, rank)
    ref = train(gloo, rank)
    start = torch.cat([p.detach().reshape(-1) for p in model().parameters()])
    c.true("training moved the parameters", (mine - start).abs().max().item() > 1e-3)
    c.close("DDP parameters chorus vs gloo", mine, ref, 1e-5)
    gathered = [torch.zeros_like(mine) for _ in range(size)]
    dist.all_gather(gathered, mine, group=gloo)
    for r in range(size):
        c.equal(f"DDP parameters on rank {r} equal rank 0's", gathered[r], gathered[0])
    print(f"rank {rank}: largest difference to gloo {(mine - ref).abs().max().item():.3g}",
          file=sys.stderr)
    code = c.finish(f"DDP {STEPS} steps at {size} ranks")
    dist.destroy_process_group(gloo)
    dist.destroy_process_group()
    return code


if __name__ == "__main__":
    sys.exit(main())
