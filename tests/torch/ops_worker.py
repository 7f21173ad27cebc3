"""Every collective of the chorus backend against gloo's result on the same inputs, and
against the result computed here from every rank's (exact, integer-valued) inputs where
gloo lacks the operation (AVG, reduce_scatter, uneven sizes, all_to_all lists)."""
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from common import Checks, init

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
          torch.int32, torch.int64]
OPS = {"SUM": dist.ReduceOp.SUM, "PRODUCT": dist.ReduceOp.PRODUCT, "MIN": dist.ReduceOp.MIN,
       "MAX": dist.ReduceOp.MAX}


def data(r, n, dtype, small=False):
    """Rank r's input: exact small integers, different on every rank (products stay <= 32)."""
    i = torch.arange(n, dtype=torch.int64)
    v = (i + r) % 2 + 1 if small else (r + 1) * (i % 7 + 1) - (i % 3 == 0) * 3 * r
    if dtype == torch.uint8:
        v = v.abs()
    return v.to(dtype)


def reduce_all(tensors, name):
    stack = torch.stack([t.to(torch.float64) for t in tensors])
    out = {"SUM": stack.sum(0), "PRODUCT": stack.prod(0), "MIN": stack.min(0).values,
           "MAX": stack.max(0).values}[name]
    return out.to(tensors[0].dtype)


def gloo_supports(dtype):
    return dtype not in (torch.bfloat16,)


def main():
    t0 = time.monotonic()
    # `chorus-default`: chorus is the default group (made by the launcher's init method)
    if sys.argv[1:] == ["chorus-default"]:
        rank, size = init("chorus")
        ch, gl = dist.group.WORLD, dist.new_group(backend="gloo")
    else:
        rank, size = init("gloo")
        ch, gl = dist.new_group(backend="chorus"), dist.group.WORLD
    verbose = os.environ.get("TORCH_CHORUS_TEST_VERBOSE")
    mark = (lambda what: print(f"rank {rank}: {what} after {time.monotonic() - t0:.1f} s",
                               file=sys.stderr)) if verbose else (lambda what: None)
    mark("groups ready")
    c = Checks(rank)
    n = 37

    # all_reduce: every dtype x op, against gloo and the local reduction.
    for dtype in DTYPES:
        for name, op in OPS.items():
            small = name == "PRODUCT"
            want = reduce_all([data(r, n, dtype, small) for r in range(size)], name)
            x = data(rank, n, dtype, small)
            dist.all_reduce(x, op=op, group=ch)
            c.equal(f"all_reduce {dtype} {name}", x, want)
            if gloo_supports(dtype):
                y = data(rank, n, dtype, small)
                dist.all_reduce(y, op=op, group=gl)
                c.equal(f"all_reduce {dtype} {name} vs gloo", x, y)
    mark("all_reduce types done")
    # AVG (gloo has none): the mean, to the type's precision.
    for dtype, tol in [(torch.float32, 1e-6), (torch.float64, 1e-12), (torch.float16, 2e-3),
                       (torch.bfloat16, 1e-2)]:
        x = data(rank, n, dtype)
        dist.all_reduce(x, op=dist.ReduceOp.AVG, group=ch)
        want = torch.stack([data(r, n, torch.float64) for r in range(size)]).mean(0)
        c.close(f"all_reduce {dtype} AVG", x, want, tol)
    # Ops and types Chorus lacks: a clear error, no hang.
    for name in ["BAND", "BOR", "BXOR"]:
        c.raises(f"all_reduce {name}", lambda: dist.all_reduce(
            data(rank, 4, torch.int32), op=getattr(dist.ReduceOp, name), group=ch), name,
            "not supported")
    c.raises("all_reduce PREMUL_SUM", lambda: dist.all_reduce(
        torch.ones(4), op=dist._make_nccl_premul_sum(2.0), group=ch), "PREMUL_SUM",
        "not supported")
    c.raises("all_reduce bool", lambda: dist.all_reduce(torch.ones(3, dtype=torch.bool), group=ch),
             "no Chorus data type")
    # Non-contiguous (every other column) and large (many slices) tensors.
    base = torch.stack([data(rank, 40, torch.float32)] * 3)
    x = base.t()[::2]  # 20 x 3, not contiguous
    c.true("test input is non-contiguous", not x.is_contiguous())
    y = x.clone()
    dist.all_reduce(x, group=ch)
    dist.all_reduce(y, group=gl)
    c.equal("all_reduce non-contiguous vs gloo", x, y)
    c.equal("all_reduce non-contiguous: the rest untouched", base.t()[1::2],
            torch.stack([data(rank, 40, torch.float32)] * 3).t()[1::2])
    big = 1_000_000 + 7
    x, y = data(rank, big, torch.float32), data(rank, big, torch.float32)
    dist.all_reduce(x, group=ch)
    dist.all_reduce(y, group=gl)
    c.equal("all_reduce 4 MB vs gloo", x, y)

    mark("big done")
    # async_op: the Work completes in the background, without wait().
    xs = [data(rank, 1000 + k, torch.int64) for k in range(4)]
    works = [dist.all_reduce(x, group=ch, async_op=True) for x in xs]
    deadline = time.monotonic() + 60
    while not all(w.is_completed() for w in works) and time.monotonic() < deadline:
        time.sleep(0.01)
    c.true("async all_reduce completes without wait()", all(w.is_completed() for w in works))
    for k, (w, x) in enumerate(zip(works, xs)):
        w.wait()
        c.equal(f"async all_reduce {k}", x,
                reduce_all([data(r, 1000 + k, torch.int64) for r in range(size)], "SUM"))
    fut = dist.all_reduce(data(rank, 5, torch.int32), group=ch, async_op=True).get_future()
    c.equal("all_reduce future value", fut.wait()[0],
            reduce_all([data(r, 5, torch.int32) for r in range(size)], "SUM"))

    mark("before # broadcast from eve")
    # broadcast from every root, reduce to every root.
    for root in range(size):
        for dtype in [torch.float32, torch.bfloat16, torch.int8]:
            x = data(rank, n, dtype)
            dist.broadcast(x, src=root, group=ch)
            c.equal(f"broadcast {dtype} root {root}", x, data(root, n, dtype))
        for name in ["SUM", "MAX"]:
            x, y = data(rank, n, torch.int32), data(rank, n, torch.int32)
            dist.reduce(x, dst=root, op=OPS[name], group=ch)
            dist.reduce(y, dst=root, op=OPS[name], group=gl)
            if rank == root:
                c.equal(f"reduce {name} root {root}", x,
                        reduce_all([data(r, n, torch.int32) for r in range(size)], name))
                c.equal(f"reduce {name} root {root} vs gloo", x, y)
    nc = torch.stack([data(rank, n, torch.float64)] * 2).t()  # non-contiguous
    dist.broadcast(nc, src=size - 1, group=ch)
    c.equal("broadcast non-contiguous", nc, torch.stack([data(size - 1, n, torch.float64)] * 2).t())

    mark("before # all_gather: list")
    # all_gather: list, uneven list, into one tensor, coalesced.
    for dtype in [torch.float16, torch.int64]:
        outs = [torch.zeros(n, dtype=dtype) for _ in range(size)]
        ref = [torch.zeros(n, dtype=dtype) for _ in range(size)]
        dist.all_gather(outs, data(rank, n, dtype), group=ch)
        dist.all_gather(ref, data(rank, n, dtype), group=gl)
        for r in range(size):
            c.equal(f"all_gather {dtype} [{r}]", outs[r], data(r, n, dtype))
            c.equal(f"all_gather {dtype} [{r}] vs gloo", outs[r], ref[r])
    sizes = [3 * r + 1 for r in range(size)]
    outs = [torch.zeros(s, dtype=torch.int32) for s in sizes]
    dist.all_gather(outs, data(rank, sizes[rank], torch.int32), group=ch)
    for r in range(size):
        c.equal(f"all_gather uneven [{r}]", outs[r], data(r, sizes[r], torch.int32))
    out = torch.zeros(size * n, dtype=torch.bfloat16)
    dist.all_gather_into_tensor(out, data(rank, n, torch.bfloat16), group=ch)
    c.equal("all_gather_into_tensor", out, torch.cat([data(r, n, torch.bfloat16) for r in range(size)]))
    out = torch.zeros(size * n, dtype=torch.float32)
    ref = [torch.zeros(n, dtype=torch.float32) for _ in range(size)]
    dist.all_gather_into_tensor(out, data(rank, n, torch.float32), group=ch)
    dist.all_gather(ref, data(rank, n, torch.float32), group=gl)  # gloo has no _allgather_base
    c.equal("all_gather_into_tensor vs gloo's all_gather", out, torch.cat(ref))
    ins = [data(rank, 5, torch.float32), data(rank + 1, 3, torch.float32)]
    outs = [[torch.zeros(5), torch.zeros(3)] for _ in range(size)]
    refs = [[torch.zeros(5), torch.zeros(3)] for _ in range(size)]
    dist.all_gather_coalesced(outs, ins, group=ch)
    dist.all_gather_coalesced(refs, ins, group=gl)
    for r in range(size):
        for i in range(2):
            c.equal(f"all_gather_coalesced [{r}][{i}] vs gloo", outs[r][i], refs[r][i])
        c.equal(f"all_gather_coalesced [{r}][1]", outs[r][1], data(r + 1, 3, torch.float32))

    mark("before # all_reduce_coalesc")
    # all_reduce_coalesced (DDP-style buckets), against gloo.
    ts = [data(rank, 7, torch.float32), data(rank, 11, torch.float32).view(11, 1)]
    rs = [t.clone() for t in ts]
    dist.all_reduce_coalesced(ts, group=ch)
    dist.all_reduce_coalesced(rs, group=gl)
    for i in range(2):
        c.equal(f"all_reduce_coalesced [{i}] vs gloo", ts[i], rs[i])

    mark("before # reduce_scatter (gl")
    # reduce_scatter (gloo has none): list and single tensor.
    for name in ["SUM", "MIN"]:
        out = torch.zeros(n, dtype=torch.float32)
        dist.reduce_scatter(out, [data(rank * size + j, n, torch.float32) for j in range(size)],
                            op=OPS[name], group=ch)
        c.equal(f"reduce_scatter {name}", out,
                reduce_all([data(r * size + rank, n, torch.float32) for r in range(size)], name))
    out = torch.zeros(n, dtype=torch.int64)
    full = torch.cat([data(rank * size + j, n, torch.int64) for j in range(size)])
    dist.reduce_scatter_tensor(out, full, group=ch)
    c.equal("reduce_scatter_tensor", out,
            reduce_all([data(r * size + rank, n, torch.int64) for r in range(size)], "SUM"))

    mark("before # all_to_all_single:")
    # all_to_all_single: equal parts, split sizes (rows), against gloo; all_to_all lists.
    x = torch.cat([data(rank * size + j, 4, torch.float32) for j in range(size)])
    out, ref = torch.zeros_like(x), torch.zeros_like(x)
    dist.all_to_all_single(out, x, group=ch)
    dist.all_to_all_single(ref, x, group=gl)
    c.equal("all_to_all_single", out, torch.cat([data(j * size + rank, 4, torch.float32)
                                                 for j in range(size)]))
    c.equal("all_to_all_single vs gloo", out, ref)
    def splits_case(name, in_splits, out_splits):
        """all_to_all_single with split sizes (rows of 2 int32), exact and against gloo."""
        x = torch.cat([data(rank * size + j, 2 * in_splits[j], torch.int32).view(-1, 2)
                       for j in range(size)])
        out = torch.zeros(sum(out_splits), 2, dtype=torch.int32)
        ref = torch.zeros_like(out)
        dist.all_to_all_single(out, x, out_splits, in_splits, group=ch)
        dist.all_to_all_single(ref, x, out_splits, in_splits, group=gl)
        c.equal(name, out, torch.cat([data(j * size + rank, 2 * out_splits[j],
                                           torch.int32).view(-1, 2) for j in range(size)]))
        c.equal(f"{name} vs gloo", out, ref)

    # rank r sends (r + j) % 3 rows of 2 columns to rank j
    splits_case("all_to_all_single splits", [(rank + j) % 3 for j in range(size)],
                [(j + rank) % 3 for j in range(size)])
    # Splits even on some ranks only: rank 0 sends and receives 1 row from everyone, rank
    # r >= 1 sends 2 rows to itself (S[r][j] rows from r to j). Every rank must agree on
    # how the call runs although rank 0's own splits look like equal parts.
    S = [[2 if (r == j and r >= 1) else 1 for j in range(size)] for r in range(size)]
    splits_case("all_to_all_single splits even on rank 0 only", S[rank],
                [S[j][rank] for j in range(size)])
    # The same with lists: rank 0's tensors all of one size, the others' not.
    ins = [data(rank * size + j, S[rank][j], torch.int64) for j in range(size)]
    outs = [torch.zeros(S[j][rank], dtype=torch.int64) for j in range(size)]
    dist.all_to_all(outs, ins, group=ch)
    for j in range(size):
        c.equal(f"all_to_all even on rank 0 only [{j}]", outs[j],
                data(j * size + rank, S[j][rank], torch.int64))
    ins = [data(rank * size + j, j + 1, torch.int64) for j in range(size)]
    outs = [torch.zeros(rank + 1, dtype=torch.int64) for _ in range(size)]
    dist.all_to_all(outs, ins, group=ch)
    for j in range(size):
        c.equal(f"all_to_all uneven [{j}]", outs[j], data(j * size + rank, rank + 1, torch.int64))

    mark("before # send/recv around")
    # send/recv around the ring (and both ways, issued before any wait).
    if size > 1:
        nxt, prv = (rank + 1) % size, (rank - 1) % size
        got = torch.zeros(n, dtype=torch.float64)
        reqs = [dist.isend(data(rank, n, torch.float64), nxt, group=ch),
                dist.irecv(got, prv, group=ch)]
        for w in reqs:
            w.wait()
        c.equal("isend/irecv ring", got, data(prv, n, torch.float64))
        got = torch.zeros(n, dtype=torch.int32)
        ops = [dist.P2POp(dist.isend, data(rank + 5, n, torch.int32), nxt, group=ch),
               dist.P2POp(dist.irecv, got, prv, group=ch)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        c.equal("batch_isend_irecv ring", got, data(prv + 5, n, torch.int32))
        if rank % 2 == 0 and rank + 1 < size:
            dist.send(data(rank, 9, torch.int8), rank + 1, group=ch)
            got = torch.zeros(9, dtype=torch.int8)
            dist.recv(got, rank + 1, group=ch)
            c.equal("send/recv pair", got, data(rank + 1, 9, torch.int8))
        elif rank % 2 == 1:
            got = torch.zeros(9, dtype=torch.int8)
            dist.recv(got, rank - 1, group=ch)
            c.equal("send/recv pair", got, data(rank - 1, 9, torch.int8))
            dist.send(data(rank, 9, torch.int8), rank - 1, group=ch)

    mark("before # gather and scatter")
    # gather and scatter, against gloo.
    root = size - 1
    outs = [torch.zeros(n) for _ in range(size)] if rank == root else None
    refs = [torch.zeros(n) for _ in range(size)] if rank == root else None
    dist.gather(data(rank, n, torch.float32), outs, dst=root, group=ch)
    dist.gather(data(rank, n, torch.float32), refs, dst=root, group=gl)
    if rank == root:
        for r in range(size):
            c.equal(f"gather [{r}] vs gloo", outs[r], refs[r])
            c.equal(f"gather [{r}]", outs[r], data(r, n, torch.float32))
    out = torch.zeros(n, dtype=torch.int32)
    dist.scatter(out, [data(j + 10, n, torch.int32) for j in range(size)] if rank == 0 else None,
                 src=0, group=ch)
    c.equal("scatter", out, data(rank + 10, n, torch.int32))

    mark("before # algorithm names")
    # Which algorithm ran (ChorusWork.algorithm, from Chorus's Work::algorithm()): the
    # group's own prediction for that tensor, at a small and a large size, then a forced one.
    pg = ch if hasattr(ch, "algorithm_for") else None
    c.true("the chorus group has algorithm_for", pg is not None)
    if pg is not None:
        for spec, forced in (("auto", None), ("allreduce:rd", "rd"), ("allreduce:auto", None)):
            pg.set_algorithm(spec)
            for m in (n, 1 << 18):
                x = data(rank, m, torch.float32)
                predicted = pg.algorithm_for("allreduce", x)
                work = dist.all_reduce(x, group=ch, async_op=True)
                work.wait()
                got = getattr(work, "algorithm", None)
                c.true(f"all_reduce {m} after set_algorithm({spec!r}) ran {got!r}, "
                       f"algorithm_for said {predicted!r}", got == predicted and bool(got))
                if forced and size > 1:
                    c.true(f"forced {forced}: ran {got!r}", got == forced)
                c.equal(f"all_reduce {m} after set_algorithm({spec!r})", x,
                        reduce_all([data(r, m, torch.float32) for r in range(size)], "SUM"))
        c.raises("algorithm_for of an unknown collective",
                 lambda: pg.algorithm_for("allsum", data(rank, n, torch.float32)), "allsum")

    mark("before dist.barrier(group=c")
    # A second chorus group of the even ranks beside the first, on the same store.
    evens = list(range(0, size, 2))
    sub = dist.new_group(ranks=evens, backend="chorus")
    if rank in evens:
        x = data(rank, n, torch.int64)
        dist.all_reduce(x, group=sub)
        c.equal("all_reduce in a subgroup of the even ranks", x,
                reduce_all([data(r, n, torch.int64) for r in evens], "SUM"))
        dist.destroy_process_group(sub)

    if size > 1:
        # A barrier holds every rank until the last arrives: rank 0 comes 1 s late.
        dist.all_reduce(torch.zeros(1), group=ch)  # line the ranks up first
        if rank == 0:
            time.sleep(1.0)
        began = time.monotonic()
        dist.barrier(group=ch)
        held = time.monotonic() - began
        if rank != 0:
            c.true(f"barrier held rank {rank} {held:.2f} s for the late rank 0 (want >= 0.5)",
                   held >= 0.5)
        # Work.wait(timeout): rank 1 joins the all-reduce 2 s late; rank 0's wait of 0.5 s
        # times out (the call goes on), and a wait without a timeout then completes it.
        x = torch.full((8,), float(rank + 1))
        if rank == 1:
            time.sleep(2.0)
        w = dist.all_reduce(x, group=ch, async_op=True)
        if rank == 0:
            began = time.monotonic()
            c.raises("wait(timeout=0.5 s) on a call a peer joins 2 s late",
                     lambda: w.wait(timeout=timedelta(seconds=0.5)), "timed out")
            waited = time.monotonic() - began
            c.true(f"wait(timeout=0.5 s) returned after {waited:.2f} s (want 0.4-1.9)",
                   0.4 <= waited <= 1.9)
        w.wait()
        c.equal("all_reduce after a timed-out wait", x,
                torch.full((8,), float(size * (size + 1) // 2)))
    dist.barrier(group=ch)
    code = c.finish(f"ops at {size} ranks")
    dist.destroy_process_group(gl if ch is dist.group.WORLD else ch)
    dist.destroy_process_group()
    mark("destroyed")
    return code


if __name__ == "__main__":
    sys.exit(main())
