#!/usr/bin/env python3
"""Where a small all-reduce step's time goes on the bed, from a step trace (trace.sh).

  where_time_goes.py PREFIX ALGO ELEMENTS [--skip 2]

Per call (medians over calls and ranks, us): for every message the sender's Send step
(start to end: its CPU's part), the hop (the Send's start, and its end, to the matching receive's end), and
on each receiving rank the spacing of its receive completions of one phase (the receives
with no Send between them in the schedule), and the wait from its own last send of the
phase before to its first receive completion. Calls whose span is over 3x the median are
left out (TCP's loss recovery, docs/sim.md tenth session).
"""
import glob, json, re, statistics, sys
from collections import defaultdict

def load(path):
    text = open(path).read().rstrip()
    if not text.endswith("]"):
        text = text.rstrip(",") + "]"
    return json.loads(text)

args = sys.argv[1:]
skip = 2
if "--skip" in args:
    i = args.index("--skip"); skip = int(args[i + 1]); del args[i:i + 2]
prefix, algo, count = args[0], args[1], int(args[2])
steps = defaultdict(lambda: defaultdict(dict))  # seq -> rank -> step -> (kind, peer, start, end)
calls = defaultdict(dict)
for path in sorted(glob.glob(prefix + ".rank*.json")):
    if not re.search(r"\.rank(\d+)\.json$", path):
        continue
    for e in load(path):
        if e.get("ph") != "X":
            continue
        a = e["args"]
        if e["cat"] == "call":
            if e["name"].split()[-1] == algo and abs(a["count"] - count) < 8:
                calls[a["seq"]][e["pid"]] = (e["ts"], e["ts"] + e["dur"])
        elif a["algo"] == algo:
            steps[a["seq"]][e["pid"]][a["step"]] = (e["name"].split()[0] if " " in e["name"] else e["name"], a["peer"], e["ts"], e["ts"] + e["dur"])
nranks = max(len(c) for c in calls.values())
seqs = sorted(s for s in calls if len(calls[s]) == nranks)[skip:]
span = {s: max(v[1] for v in calls[s].values()) - min(v[0] for v in calls[s].values()) for s in seqs}
med_span = statistics.median(span.values())
seqs = [s for s in seqs if span[s] <= 3 * med_span]
send_dur, send_gap, hop, hop_end, recv_gap, first_wait, kinds = [], [], [], [], [], [], set()
for s in seqs:
    rs = steps[s]
    for r, st in rs.items():
        order = sorted(st)
        # sends to each peer in order: the k-th send from r to q matches the k-th receive at q from r
        for i in order:
            kinds.add(st[i][0])
        sends = [i for i in order if st[i][0] == "Send"]
        for a, b in zip(sends, sends[1:]):
            if b == a + 1:
                send_gap.append(st[b][2] - st[a][2])
        send_dur += [st[i][3] - st[i][2] for i in sends]
        # phases: maximal runs of receives in schedule order
        run = []
        for i in order + [None]:
            if i is not None and st[i][0] in ("Recv", "RecvReduce"):
                run.append(i); continue
            if len(run) > 1:
                ends = sorted(st[j][3] for j in run)
                recv_gap += [b - a for a, b in zip(ends, ends[1:])]
            if run:
                before = [j for j in sends if j < run[0]]
                if before:
                    first_wait.append(min(st[j][3] for j in run) - st[before[-1]][3])
            run = []
    # hops
    for r, st in rs.items():
        k = defaultdict(int)
        for i in sorted(st):
            kind, peer = st[i][0], st[i][1]
            if kind != "Send" or peer == r:
                continue
            n = k[peer]; k[peer] += 1
            recvs = [j for j in sorted(rs[peer]) if rs[peer][j][0] in ("Recv", "RecvReduce") and rs[peer][j][1] == r]
            if n < len(recvs):
                hop.append(rs[peer][recvs[n]][3] - st[i][2])
                hop_end.append(rs[peer][recvs[n]][3] - st[i][3])
m = lambda v: "%.0f (n %d)" % (statistics.median(v), len(v)) if v else "-"
print("%s %d elements, %d ranks, %d calls (span median %.0f us)" % (algo, count, nranks, len(seqs), med_span))
print("  send step (start-end) %s; back-to-back sends start-to-start %s" % (m(send_dur), m(send_gap)))
print("  hop (send start -> receive end) %s; (send end -> receive end) %s" % (m(hop), m(hop_end)))
print("  a phase's receive completions apart %s; own last send end -> first receive end %s" % (m(recv_gap), m(first_wait)))
