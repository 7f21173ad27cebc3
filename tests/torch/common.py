"""Shared by the torch test workers: init from the launcher's variables, checks."""
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import chorus.torch  # noqa: F401  registers the "chorus" backend


def init(backend, timeout_s=120):
    how = os.environ.get("TORCH_CHORUS_TEST_INIT", "env")
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    timeout = timedelta(seconds=timeout_s)
    if how == "env":
        dist.init_process_group(backend, init_method="env://", timeout=timeout)
    elif how == "tcp":
        url = f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
        dist.init_process_group(backend, init_method=url, rank=rank, world_size=size,
                                timeout=timeout)
    else:
        dist.init_process_group(backend,
                                init_method="file://" + os.environ["TORCH_CHORUS_TEST_FILE"],
                                rank=rank, world_size=size, timeout=timeout)
    return rank, size


class Checks:
    def __init__(self, rank):
        self.rank, self.failures, self.count = rank, [], 0

    def equal(self, what, got, want):
        self.count += 1
        if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
            self.failures.append(f"{what}: got {got.flatten()[:8].tolist()} {got.dtype} "
                                 f"{tuple(got.shape)}, want {want.flatten()[:8].tolist()} "
                                 f"{want.dtype} {tuple(want.shape)}")

    def close(self, what, got, want, tol):
        self.count += 1
        if not torch.allclose(got.double(), want.double(), rtol=tol, atol=tol):
            self.failures.append(f"{what}: got {got.flatten()[:8].tolist()}, "
                                 f"want {want.flatten()[:8].tolist()}")

    def true(self, what, ok):
        self.count += 1
        if not ok:
            self.failures.append(what)

    def raises(self, what, fn, *needles):
        self.count += 1
        try:
            fn()
        except RuntimeError as e:
            missing = [n for n in needles if n not in str(e)]
            if missing:
                self.failures.append(f"{what}: error lacks {missing}: {e}")
            return
        self.failures.append(f"{what}: no RuntimeError")

    def finish(self, name):
        for f in self.failures:
            print(f"rank {self.rank}: FAIL {f}", file=sys.stderr)
        print(f"rank {self.rank}: {name}: {self.count - len(self.failures)}/{self.count} checks "
              "passed", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        return 1 if self.failures else 0
