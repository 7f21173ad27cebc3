"""A rank killed (SIGKILL) after the first all_reduce: every survivor's next collective
raises a RuntimeError naming the dead rank, the collective and its sequence number, well
within the process group's timeout, and the group's failed_ranks is [2]. With `hang`, the rank stays alive but stops calling:
the survivors' error comes when the timeout given to init_process_group runs out (not
before), names the collective and the awaited rank."""
import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from common import init

HANG = sys.argv[1:] == ["hang"]
TIMEOUT_S = 4 if HANG else 30
VICTIM = 2


def main():
    # The group under test has the short timeout; the default group's rendezvous keeps a long
    # one, so that 3 slow torch imports on a loaded machine cannot run out a 4 s set-up.
    rank, size = init("chorus", timeout_s=120)
    group = dist.new_group(backend="chorus", timeout=timedelta(seconds=TIMEOUT_S))
    x = torch.ones(1000)
    dist.all_reduce(x, group=group)
    assert x[0].item() == size
    if rank == VICTIM:
        if HANG:  # alive, silent, until every survivor has had its error
            store = dist.distributed_c10d._get_default_store()
            store.wait([f"reported/{r}" for r in range(size) if r != VICTIM],
                       timedelta(seconds=120))
            store.set(f"reported/{rank}", "1")
            os._exit(3)
        os.kill(os.getpid(), signal.SIGKILL)
    start = time.monotonic()
    try:
        for _ in range(100):
            dist.all_reduce(x, group=group)  # the victim never joins these
        print(f"rank {rank}: FAIL no error after the death of rank {VICTIM}", file=sys.stderr)
        code = 1
    except RuntimeError as e:
        took = time.monotonic() - start
        msg = str(e)
        needed = [f"rank {VICTIM}", "allReduce #1 "]  # #0 was the one before the death
        if HANG:
            needed.append("no progress for")
        missing = [n for n in needed if n not in msg]
        if not HANG:  # the process group names the dead rank for Python too
            seen = group.failed_ranks
            if seen != [VICTIM]:
                missing.append(f"failed_ranks {seen!r} == [{VICTIM}]")
        early = HANG and took < TIMEOUT_S * 0.9
        code = 1 if missing or early or took > (TIMEOUT_S * 3 if HANG else TIMEOUT_S) else 0
        print(f"rank {rank}: {'FAIL' if code else 'ok'} error after {took:.2f} s "
              f"(timeout {TIMEOUT_S} s){', lacks ' + str(missing) if missing else ''}: {msg}",
              file=sys.stderr)
    sys.stderr.flush()
    if HANG:
        store = dist.distributed_c10d._get_default_store()
        store.set(f"reported/{rank}", "1")
        if rank == 0:  # hosts the store: leaves last
            store.wait([f"reported/{r}" for r in range(size)], timedelta(seconds=120))
    os._exit(code)  # leave without the collective tear-down: a peer is dead


if __name__ == "__main__":
    main()
