"""Checks chorus-sim --timeline's Chrome-trace files.

  timeline_check.py SIM.json CSV ALGORITHM BYTES NRANKS [ENGINE_PREFIX]

SIM.json must hold one call (seq 0) of every rank 0..NRANKS-1, each step once (indices
0..k-1), every step starting and ending no earlier than the step it waits for (`after`), every
receive ending no earlier than its matching send (the same pair's sends and receives in
order) started, each rank's call span from 0 to its last step's end, and the latest span
end equal to the CSV row's time for ALGORITHM at BYTES. With ENGINE_PREFIX (a run's
CHORUS_TRACE_STEPS prefix, files ENGINE_PREFIX.rankR.json), some call of ALGORITHM there
must have, on every rank, exactly the steps the simulator replayed (kind, peer, bytes,
after): the simulator and the engine ran one schedule.
"""
import csv
import json
import sys

sim_path, csv_path, algorithm, nbytes, nranks = sys.argv[1:6]
nbytes, nranks = int(nbytes), int(nranks)
engine_prefix = sys.argv[6] if len(sys.argv) > 6 else None
bad = []


def read(path):
    """(steps by (rank, seq): {index: args + times}, call spans by (rank, seq))."""
    steps, spans = {}, {}
    for e in json.load(open(path)):
        if e.get("ph") != "X":
            continue
        key = (e["pid"], e["args"]["seq"])
        if e["cat"] == "call":
            spans[key] = (e["ts"], e["ts"] + e["dur"])
            continue
        a = dict(e["args"], start=e["ts"], end=e["ts"] + e["dur"])
        call = steps.setdefault(key, {})
        if a["step"] in call:
            bad.append(f"rank {e['pid']} step {a['step']} twice")
        call[a["step"]] = a
    return steps, spans


def shape(call):
    return [(i, call[i]["kind"], call[i]["peer"], call[i]["bytes"], call[i]["after"])
            for i in sorted(call)]


steps, spans = read(sim_path)
if sorted(steps) != [(r, 0) for r in range(nranks)]:
    bad.append(f"calls {sorted(steps)}, want seq 0 of ranks 0..{nranks - 1}")
tol = 0.002  # us: times are written to the ns
sends, recvs = {}, {}
for (rank, _), call in sorted(steps.items()):
    if sorted(call) != list(range(len(call))):
        bad.append(f"rank {rank}: step indices {sorted(call)}")
    for i, s in sorted(call.items()):
        if s["algo"] != algorithm:
            bad.append(f"rank {rank} step {i}: algo {s['algo']}")
        if s["end"] < s["start"]:
            bad.append(f"rank {rank} step {i} ends before it starts")
        # A step may move its first slice once the step it waits for moved that slice
        # (pipelining), and cannot finish before it.
        dep = call.get(s["after"]) if s["after"] >= 0 else None
        if dep and (s["start"] < dep["start"] - tol or s["end"] < dep["end"] - tol):
            bad.append(f"rank {rank} step {i} [{s['start']}, {s['end']}] is not behind step "
                       f"{s['after']} [{dep['start']}, {dep['end']}]")
        if s["kind"] == "Send":
            sends.setdefault((rank, s["peer"]), []).append(s)
        elif s["kind"] in ("Recv", "RecvReduce"):
            recvs.setdefault((s["peer"], rank), []).append(s)
    last = max(s["end"] for s in call.values())
    span = spans.get((rank, 0))
    if span is None or abs(span[0]) > tol or abs(span[1] - last) > tol:
        bad.append(f"rank {rank}: call span {span}, steps end at {last}")
if sorted(sends) != sorted(recvs):
    bad.append(f"send pairs {sorted(sends)} != receive pairs {sorted(recvs)}")
for pair in sends:
    for s, r in zip(sends[pair], recvs.get(pair, [])):
        if s["bytes"] != r["bytes"] or r["end"] < s["start"] - tol:
            bad.append(f"{pair}: send {s} / receive {r}")

rows = [row for row in csv.DictReader(open(csv_path))
        if row["algorithm"] == algorithm and int(row["bytes"]) == nbytes]
if len(rows) != 1:
    bad.append(f"{len(rows)} CSV rows for {algorithm} at {nbytes} B")
elif spans:
    latest = max(end for _, end in spans.values())
    us = float(rows[0]["us"])
    if abs(latest - us) > max(tol, us * 1e-5):  # the CSV keeps 6 significant digits
        bad.append(f"latest call end {latest} us, the CSV's time {us} us")

if engine_prefix:
    engine = {}
    for r in range(nranks):
        engine.update(read(f"{engine_prefix}.rank{r}.json")[0])
    seqs = {seq for (_, seq) in engine}
    matching = [seq for seq in sorted(seqs)
                if all((r, seq) in engine and shape(engine[(r, seq)]) == shape(steps.get((r, 0), {}))
                       and all(s["algo"] == algorithm for s in engine[(r, seq)].values())
                       for r in range(nranks))]
    if not matching:
        bad.append(f"no call in {engine_prefix}.rank*.json ran the simulated steps")

for line in bad[:20]:
    print("FAIL:", line)
print(f"{sim_path}: {sum(len(c) for c in steps.values())} steps on {len(steps)} ranks, "
      f"{'bad' if bad else 'ok'}")
sys.exit(1 if bad else 0)
