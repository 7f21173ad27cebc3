"""The chorus package's failed ranks, for Python users: rank 2 of 3 kills itself (SIGKILL)
after the first all_reduce. Every survivor's next collective raises chorus.Error (a
RuntimeError) whose failed_ranks is [2], the communicator's failed_ranks says the same
(it was [] before the death), and the error's code is chorusRemoteError: what a survivor
needs to know whom to leave out."""
import os
import signal
import sys

import numpy as np

import chorus

VICTIM = 2
REMOTE_ERROR = 6  # chorusRemoteError


def main():
    comm = chorus.Communicator.from_env(timeout=30)
    rank = comm.rank
    x = np.ones(1000, np.float32)
    comm.all_reduce(x, x).wait()
    fails = []
    if x[0] != comm.size:
        fails.append(f"first all_reduce gave {x[0]}")
    if comm.failed_ranks != []:
        fails.append(f"failed_ranks before any failure: {comm.failed_ranks}")
    if rank == VICTIM:
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        for _ in range(100):
            comm.all_reduce(x, x).wait()
        fails.append(f"no error after the death of rank {VICTIM}")
    except chorus.Error as e:
        if not isinstance(e, RuntimeError):
            fails.append("chorus.Error is not a RuntimeError")
        if e.failed_ranks != [VICTIM]:
            fails.append(f"error's failed_ranks {e.failed_ranks!r}, want [{VICTIM}]: {e}")
        if e.code != REMOTE_ERROR:
            fails.append(f"error's code {e.code!r}, want {REMOTE_ERROR}: {e}")
        if comm.failed_ranks != [VICTIM]:
            fails.append(f"comm.failed_ranks {comm.failed_ranks!r}, want [{VICTIM}]")
    for f in fails:
        print(f"rank {rank}: FAIL {f}", file=sys.stderr)
    print(f"rank {rank}: {'FAIL' if fails else 'ok'} failed ranks seen from Python",
          file=sys.stderr)
    sys.stderr.flush()
    os._exit(1 if fails else 0)  # no collective tear-down: a peer is dead


if __name__ == "__main__":
    main()
