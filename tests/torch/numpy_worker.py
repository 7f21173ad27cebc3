"""The chorus package's communicator on NumPy arrays (no torch): every collective against
the result computed here from every rank's exact integer inputs; and Work.wait(timeout) and
Work.test() while a peer holds back."""
import os
import sys
import time

import numpy as np

import chorus


def data(r, n, dtype):
    i = np.arange(n, dtype=np.int64)
    return ((r + 1) * (i % 7 + 1)).astype(dtype)


def main():
    comm = chorus.Communicator.from_env(timeout=60)
    rank, size = comm.rank, comm.size
    fails, checks = [], 0

    def check(what, got, want):
        nonlocal checks
        checks += 1
        if got.dtype != want.dtype or not np.array_equal(got, want):
            fails.append(f"{what}: got {got[:6]}, want {want[:6]}")

    # One host (chorus-run): every rank is local, in rank order.
    check("local_rank, local_size", np.array([comm.local_rank, comm.local_size]),
          np.array([rank, size]))

    n = 1001
    everyone = lambda dtype, m=n: [data(r, m, dtype) for r in range(size)]
    for dtype in [np.float32, np.float64, np.float16, np.int8, np.uint8, np.int32, np.uint32,
                  np.int64, np.uint64]:
        out = np.zeros(n, dtype)
        comm.all_reduce(data(rank, n, dtype), out).wait()
        check(f"all_reduce sum {np.dtype(dtype).name}", out, np.sum(everyone(dtype), axis=0,
                                                                     dtype=dtype))
    out = np.zeros(n, np.int32)
    comm.all_reduce(data(rank, n, np.int32), out, op="max").wait()
    check("all_reduce max", out, np.max(everyone(np.int32), axis=0))
    x = data(rank, n, np.float64)
    comm.all_reduce(x, x, op="min").wait()  # in place
    check("all_reduce min in place", x, np.min(everyone(np.float64), axis=0))
    out = np.zeros(n, np.int64)
    comm.all_reduce(data(rank, n, np.int64), out, op="prod").wait()
    check("all_reduce prod", out, np.prod(everyone(np.int64), axis=0))
    out = np.zeros(n, np.float64)
    comm.all_reduce(data(rank, n, np.float64), out, op="avg").wait()
    want = np.sum(everyone(np.float64), axis=0) / size  # exact sums, one rounding
    checks += 1
    if not np.all(np.abs(out - want) <= 2 * np.spacing(want)):  # 2 ULP, as nccl-tests
        fails.append(f"all_reduce avg: got {out[:6]}, want {want[:6]}")
    if size > 1:  # a peer holding back: wait(timeout) and test() say not yet, then done
        hold = os.path.join(os.path.dirname(os.environ["TORCH_CHORUS_TEST_FILE"]), "numpy-hold")
        x = data(rank, n, np.int32)
        if rank == 0:
            work = comm.all_reduce(x, x)
            start = time.monotonic()
            early = work.wait(0.2)
            took = time.monotonic() - start
            polled = work.test()
            open(hold, "w").close()  # the others join only now
            checks += 1
            if early or polled or not 0.15 < took < 10:
                fails.append(f"wait(0.2) gave {early} after {took:.3f} s, test() {polled}, "
                             "while the peers held back")
            checks += 1
            if not work.wait(60):
                fails.append("wait(60) after the peers joined: False")
        else:
            deadline = time.monotonic() + 60
            while not os.path.exists(hold) and time.monotonic() < deadline:
                time.sleep(0.01)
            comm.all_reduce(x, x).wait()
        check("all_reduce after a wait(timeout)", x, np.sum(everyone(np.int32), axis=0,
                                                            dtype=np.int32))
    out = np.zeros(n * size, np.int64)
    comm.all_gather(data(rank, n, np.int64), out).wait()
    check("all_gather", out, np.concatenate(everyone(np.int64)))
    out = np.zeros(n, np.float32)
    comm.reduce_scatter(np.concatenate([data(rank + j, n, np.float32) for j in range(size)]),
                        out).wait()
    check("reduce_scatter", out, np.sum([data(r + rank, n, np.float32) for r in range(size)],
                                        axis=0, dtype=np.float32))
    buf = data(rank, n, np.int8)
    comm.broadcast(buf, root=size - 1).wait()
    check("broadcast", buf, data(size - 1, n, np.int8))
    out = np.zeros(n, np.int64) if rank == 0 else None
    comm.reduce(data(rank, n, np.int64), out, root=0).wait()
    if rank == 0:
        check("reduce", out, np.sum(everyone(np.int64), axis=0))
    send = np.concatenate([data(rank * size + j, 5, np.int32) for j in range(size)])
    out = np.zeros_like(send)
    comm.all_to_all(send, out).wait()
    check("all_to_all", out, np.concatenate([data(j * size + rank, 5, np.int32)
                                             for j in range(size)]))
    if size > 1:
        got = np.zeros(n, np.float32)
        works = [comm.send(data(rank, n, np.float32), (rank + 1) % size),
                 comm.recv(got, (rank - 1) % size)]
        for w in works:
            w.wait()
        check("send/recv ring", got, data((rank - 1) % size, n, np.float32))
    # Which algorithm ran (Work.algorithm): the communicator's own prediction for that call,
    # at a small and a large size, then a forced one (a name, not a prediction).
    for spec, forced in (("auto", None), ("allreduce:rd", "rd"), ("allreduce:auto", None)):
        comm.set_algorithm(spec)
        for m in (n, 1 << 18):
            x = data(rank, m, np.float32)
            predicted = comm.algorithm_for("allreduce", m, np.float32)
            work = comm.all_reduce(x, x)
            work.wait()
            checks += 1
            if work.algorithm != predicted or not predicted:
                fails.append(f"all_reduce {m} after {spec!r}: ran {work.algorithm!r}, "
                             f"algorithm_for said {predicted!r}")
            if forced and size > 1:
                checks += 1
                if work.algorithm != forced:
                    fails.append(f"forced {forced}: ran {work.algorithm!r}")
            check(f"all_reduce {m} after {spec!r}", x,
                  np.sum([data(r, m, np.float32) for r in range(size)], axis=0, dtype=np.float32))
    checks += 1
    try:
        comm.algorithm_for("allsum", 8, np.float32)
        fails.append("algorithm_for('allsum'): no error")
    except chorus.Error as e:
        if "allsum" not in str(e):
            fails.append(f"algorithm_for('allsum'): unclear error {e}")
    checks += 1
    try:
        comm.all_reduce(np.zeros(3, np.complex64), np.zeros(3, np.complex64))
        fails.append("complex64: no error")
    except TypeError as e:
        if "no Chorus data type" not in str(e):
            fails.append(f"complex64: unclear error {e}")
    comm.close()
    for f in fails:
        print(f"rank {rank}: FAIL {f}", file=sys.stderr)
    print(f"rank {rank}: numpy at {size} ranks: {checks - len(fails)}/{checks} checks passed",
          file=sys.stderr)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
