#!/usr/bin/env python3
"""Where the exposed all-reduce time of chorus-train goes, from its merged trace.json.

For step s and rank r: b = the end of r's backward, B = the latest end of backward over
all ranks in that step. The exposed time is r's "wait for all-reduce" spans between b and
its next backward (one, or one per bucket when the optimizer steps each bucket as soon as
it is reduced); each span's part
  skew: before B        waiting for slower ranks to finish their backward: the last
                        bucket cannot be reduced before every rank has its gradients,
                        whatever drives the communication;
  tail: after B         reduction work left after the last rank's backward ended: what a
                        better overlap (progress, bucket order, bucket size) can hide.
Usage: overlap_trace.py OUT/trace.json [--skip 2]   (the first steps warm up)
"""
import json
import sys
from collections import defaultdict


def main():
    path = sys.argv[1]
    skip = int(sys.argv[sys.argv.index("--skip") + 1]) if "--skip" in sys.argv else 2
    events = json.load(open(path))["traceEvents"]
    backward = defaultdict(list)  # rank -> [(start, end)] in step order
    waits = defaultdict(list)  # rank -> [(start, end)]
    reduce_us = defaultdict(float)  # rank -> all-reduce span total
    buckets = defaultdict(list)  # (rank, bucket name) -> [(start, end)] in step order
    for e in events:
        if e.get("ph") != "X":
            continue
        end = e["ts"] + e["dur"]
        if e["name"] == "backward":
            backward[e["pid"]].append((e["ts"], end))
        elif e["name"] == "wait for all-reduce":
            waits[e["pid"]].append((e["ts"], end))
        elif e["name"].startswith("all-reduce bucket"):
            reduce_us[e["pid"]] += e["dur"]
            buckets[(e["pid"], e["name"])].append((e["ts"], end))
    ranks = sorted(backward)
    steps = min(len(backward[r]) for r in ranks)
    skew = tail = exposed = 0.0
    n = 0
    for s in range(skip, steps):
        B = max(backward[r][s][1] for r in ranks)
        nxt = {r: backward[r][s + 1][0] if s + 1 < len(backward[r]) else float("inf") for r in ranks}
        for r in ranks:
            b = backward[r][s][1]
            # the waits that follow this backward (before the next step's backward)
            for w0, w1 in (w for w in waits[r] if b <= w[0] < nxt[r]):
                exposed += w1 - w0
                skew += max(0.0, min(w1, B) - w0)
                tail += max(0.0, w1 - max(w0, B))
            n += 1
    steps_used = max(1, steps - skip)
    print(f"ranks {len(ranks)}, steps analysed {steps_used} (first {skip} skipped)")
    print(f"exposed all-reduce per rank-step: {exposed / n / 1e3:.2f} ms")
    print(f"  waiting for the slowest rank's backward (skew): {skew / n / 1e3:.2f} ms "
          f"({100 * skew / max(exposed, 1e-9):.0f}%)")
    print(f"  reduction left after every backward ended (tail): {tail / n / 1e3:.2f} ms "
          f"({100 * tail / max(exposed, 1e-9):.0f}%)")
    # How much backward is left when each bucket's all-reduce starts: the window it can hide in.
    for name in sorted({k[1] for k in buckets}):
        left = dur = 0.0
        m = 0
        for r in ranks:
            spans = buckets[(r, name)]
            for s in range(skip, min(steps, len(spans))):
                left += max(0.0, backward[r][s][1] - spans[s][0])
                dur += spans[s][1] - spans[s][0]
                m += 1
        print(f"  {name}: {dur / max(m, 1) / 1e3:.2f} ms from start to end; backward left when "
              f"it starts {left / max(m, 1) / 1e3:.2f} ms")
    print(f"all-reduce span per rank-step (whole trace): "
          f"{sum(reduce_us.values()) / len(ranks) / steps / 1e3:.2f} ms")


if __name__ == "__main__":
    main()
