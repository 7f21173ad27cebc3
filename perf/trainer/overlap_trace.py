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
Since 2026-12-03 the trace also has each bucket's readiness and the bucket each wait is
for; the report's split then counts as waiting for a slower rank only the part of a wait
before every rank had completed the awaited bucket (R <= B): the part between R and B is
all-reduce not hidden while a slower rank still computes.
Also printed: the issue's hidden fraction from the spans, and the spread of the ranks'
backward ends (max - min per step).
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
    ready = defaultdict(list)  # (rank, bucket) -> [time backward completed it] in step order
    wait_bucket = {}  # (rank, wait start) -> bucket (traces since 2026-12-03)
    for e in events:
        if e.get("ph") != "X":
            continue
        end = e["ts"] + e["dur"]
        if e["name"] == "backward":
            backward[e["pid"]].append((e["ts"], end))
        elif e["name"].startswith("wait for all-reduce"):  # "... bucket K" since 2026-12-03
            waits[e["pid"]].append((e["ts"], end))
            if e["name"] != "wait for all-reduce":
                wait_bucket[(e["pid"], e["ts"])] = int(e["name"].rsplit(" ", 1)[1])
        elif e["name"].startswith("ready: bucket "):
            ready[(e["pid"], int(e["name"].rsplit(" ", 1)[1]))].append(e["ts"])
        elif e["name"].startswith("all-reduce bucket"):
            reduce_us[e["pid"]] += e["dur"]
            buckets[(e["pid"], e["name"])].append((e["ts"], end))
    ranks = sorted(backward)
    steps = min(len(backward[r]) for r in ranks)
    skew = tail = exposed = before_ready = 0.0
    split = bool(ready) and bool(wait_bucket)
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
                if split:  # R: when the last rank completed the awaited bucket
                    k = wait_bucket[(r, w0)]
                    R = max(ready[(q, k)][s] for q in ranks)
                    before_ready += max(0.0, min(w1, R) - w0)
            n += 1
    steps_used = max(1, steps - skip)
    print(f"ranks {len(ranks)}, steps analysed {steps_used} (first {skip} skipped)")
    print(f"exposed all-reduce per rank-step: {exposed / n / 1e3:.2f} ms")
    print(f"  waiting for the slowest rank's backward (skew): {skew / n / 1e3:.2f} ms "
          f"({100 * skew / max(exposed, 1e-9):.0f}%)")
    print(f"  reduction left after every backward ended (tail): {tail / n / 1e3:.2f} ms "
          f"({100 * tail / max(exposed, 1e-9):.0f}%)")
    if split:  # the report's split: a wait is for a slower rank only until it has the bucket
        print(f"  split by the awaited bucket instead: before every rank had completed it "
              f"(waiting for a slower rank's backward, the report's figure): "
              f"{before_ready / n / 1e3:.2f} ms; all-reduce not hidden: "
              f"{(exposed - before_ready) / n / 1e3:.2f} ms")
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

    # The figure, from the spans themselves: of the time some all-reduce of the step
    # was running on rank r (the union of its buckets' spans), the part inside r's own
    # backward pass. Spans after r's backward, including those waiting for a slower rank,
    # count as not hidden.
    inside = total = 0.0
    for r in ranks:
        for s in range(skip, steps):
            b0, b1 = backward[r][s]
            lo = b0
            hi = backward[r][s + 1][0] if s + 1 < len(backward[r]) else float("inf")
            spans = sorted(x for name in {k[1] for k in buckets if k[0] == r}
                           for x in buckets[(r, name)] if lo <= x[0] < hi)
            covered = float("-inf")
            for x0, x1 in spans:
                x0 = max(x0, covered)
                if x1 > x0:
                    total += x1 - x0
                    inside += max(0.0, min(x1, b1) - max(x0, b0))
                covered = max(covered, x1)
    print(f"hidden (issue's definition: all-reduce span time inside the rank's own backward / "
          f"all-reduce span time): {inside / max(total, 1e-9):.3f}")
    # How far apart the ranks' backward passes end (what the fastest waits for), and start.
    spread = sorted(max(backward[r][s][1] for r in ranks) - min(backward[r][s][1] for r in ranks)
                    for s in range(skip, steps))
    start_spread = sorted(max(backward[r][s][0] for r in ranks) -
                          min(backward[r][s][0] for r in ranks) for s in range(skip, steps))
    last = defaultdict(int)
    for s in range(skip, steps):
        last[max(ranks, key=lambda r: backward[r][s][1])] += 1
    pct = lambda xs, q: xs[min(len(xs) - 1, int(q * len(xs)))] / 1e3
    print(f"backward end spread over ranks (skew of ends): median {pct(spread, 0.5):.2f} ms, "
          f"p90 {pct(spread, 0.9):.2f} ms; backward start spread median "
          f"{pct(start_spread, 0.5):.2f} ms; last to end: " +
          " ".join(f"rank {r} x{last[r]}" for r in ranks))


if __name__ == "__main__":
    main()
