#!/usr/bin/env python3
"""A measured call's steps beside the replay's, step by step.

  perf/step_trace_compare.py BED_PREFIX SIM_TIMELINE.json [--skip N] [--max-span F]

BED_PREFIX: CHORUS_TRACE_STEPS of a run (files BED_PREFIX.rank*.json, src/engine/
step_trace.hpp). SIM_TIMELINE.json: one file of `chorus-sim --full --timeline PREFIX`
(PREFIX.ALGORITHM.BYTES.json), whose algorithm and element count pick the measured calls
(the count within the rank count of the simulated one: chorus-sim rounds it to a multiple
of the ranks). Of those calls the first --skip (default 2: chorus-perf's warm-up and check)
are left out, and with --max-span F those whose span (first submission to last done)
exceeds F times the median span (calls that stalled: on the netns bed, TCP's loss recovery
holds a message for 20-60 ms in a few calls in a hundred); per call, time 0 is the earliest submission of any rank (the replay starts
every rank at 0). Prints per rank and step the median over the calls of the measured start
and end, the replayed start and end, and per rank its call's submission and end.
"""
import glob
import json
import re
import statistics
import sys
from collections import defaultdict


def load(path):
    with open(path) as f:
        text = f.read().rstrip()
    if not text.endswith("]"):  # a run that died before closing the array
        text = text.rstrip(",") + "]"
    return json.loads(text)


def main():
    args = sys.argv[1:]
    skip, max_span = 2, 0.0
    if "--skip" in args:
        i = args.index("--skip")
        skip = int(args[i + 1])
        del args[i : i + 2]
    if "--max-span" in args:
        i = args.index("--max-span")
        max_span = float(args[i + 1])
        del args[i : i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    prefix, simfile = args
    sim = load(simfile)
    sim_steps = {}
    sim_calls = {}
    algo = count = None
    for e in sim:
        if e.get("ph") != "X":
            continue
        if e["cat"] == "call":
            algo = e["name"].split()[-1]
            count = e["args"]["count"]
            sim_calls[e["pid"]] = e["ts"] + e["dur"]
        else:
            sim_steps[(e["pid"], e["args"]["step"])] = e
    nranks = len(sim_calls)
    # measured: rank -> seq -> {step: event}, and the calls
    steps = defaultdict(lambda: defaultdict(dict))
    calls = defaultdict(dict)
    files = sorted(glob.glob(prefix + ".rank*.json"))
    if not files:
        sys.exit("no files " + prefix + ".rank*.json")
    for path in files:
        m = re.search(r"\.rank(\d+)\.json$", path)
        if not m:
            continue  # another communicator's (.rankR.K.json)
        for e in load(path):
            if e.get("ph") != "X":
                continue
            a = e["args"]
            if e["cat"] == "call":
                if e["name"].split()[-1] == algo and abs(a["count"] - count) < nranks:
                    calls[e["pid"]][a["seq"]] = (e["ts"], e["ts"] + e["dur"])
            elif a["algo"] == algo:
                steps[e["pid"]][a["seq"]][a["step"]] = e
    seqs = sorted(set.intersection(*(set(calls[r]) for r in range(nranks))))[skip:]
    if not seqs:
        sys.exit("no measured calls of %s with %d elements" % (algo, count))

    def span(s):
        return (max(calls[r][s][1] for r in range(nranks)) -
                min(calls[r][s][0] for r in range(nranks)))
    stalled = 0
    if max_span > 0:
        limit = max_span * statistics.median(span(s) for s in seqs)
        kept = [s for s in seqs if span(s) <= limit]
        stalled = len(seqs) - len(kept)
        seqs = kept
    rel = defaultdict(lambda: ([], []))  # (rank, step) -> starts, ends
    sub = defaultdict(lambda: ([], []))  # rank -> submitted, done
    for s in seqs:
        t0 = min(calls[r][s][0] for r in range(nranks))
        for r in range(nranks):
            sub[r][0].append(calls[r][s][0] - t0)
            sub[r][1].append(calls[r][s][1] - t0)
            for i, e in steps[r][s].items():
                rel[(r, i)][0].append(e["ts"] - t0)
                rel[(r, i)][1].append(e["ts"] + e["dur"] - t0)
    med = statistics.median
    print("# %s, %d elements, %d ranks: %d measured calls (median us from the first "
          "submission; %d stalled calls left out) against the replay (us)" % (
              algo, count, nranks, len(seqs), stalled))
    print("# %4s %4s %-10s %4s %8s | %9s %9s %8s | %9s %9s %8s" % (
        "rank", "step", "kind", "peer", "bytes", "bed start", "bed end", "bed dur",
        "sim start", "sim end", "sim dur"))
    for r in range(nranks):
        print("# rank %d: submitted %.0f, done %.0f (bed); done %.0f (sim)" % (
            r, med(sub[r][0]), med(sub[r][1]), sim_calls[r]))
        for (rank, i), e in sorted(sim_steps.items()):
            if rank != r:
                continue
            a = e["args"]
            b = rel.get((r, i))
            bed = ("%9.0f %9.0f %8.0f" % (med(b[0]), med(b[1]), med(b[1]) - med(b[0]))
                   if b and b[0] else "%9s %9s %8s" % ("-", "-", "-"))
            print("  %4d %4d %-10s %4d %8d | %s | %9.0f %9.0f %8.0f" % (
                r, i, a["kind"], a["peer"], a["bytes"], bed, e["ts"], e["ts"] + e["dur"],
                e["dur"]))
    bed_end = med([span(s) for s in seqs])
    print("# call: bed %.0f us (median, first submission to last done), sim %.0f us" % (
        bed_end, max(sim_calls.values())))


if __name__ == "__main__":
    main()
