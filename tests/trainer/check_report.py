#!/usr/bin/env python3
"""Checks a chorus-train run's report.json against its trace.json (bit_exact_resume.sh).

  check_report.py OUT_DIR OVERLAP_TRACE_PY
1. Every "all-reduce bucket K (... MB, ALGO)" event names, on every rank, the algorithm
   report.json's allreduce_algorithm lists at K (both come from Work::algorithm).
2. exposed_comm = waiting for a slower rank's backward + transfer (all-reduce not hidden),
   the waiting part equals overlap_trace.py's figure recomputed from the trace (each wait
   up to the moment every rank had completed the awaited bucket), and the part after the
   last backward equals its tail; the hidden fraction (the part of the all-reduce spans
   inside the rank's own backward) equals the trace's.
3. DDP's definition of the all-reduce time (the envelope) is at least the union of the
   buckets' spans, so its hidden fraction is at least 1 - exposed / spans; the start delay
   is not negative.
4. The communicator was created with CHORUS_SPIN_US=0 (chorus-train's default --spin-us:
   its communication thread sleeps at once instead of polling with sched_yield).
5. The communication thread runs at chorus-train's default --comm-nice -10 relative to the
   training thread where this process may lower its nice (0 where it may not), clamped
   at -20.
Exit 1 naming the first disagreement.
"""
import json
import os
import re
import subprocess
import sys


def fail(msg):
    print("check_report: " + msg)
    sys.exit(1)


def main():
    out, overlap = sys.argv[1], sys.argv[2]
    report = json.load(open(out + "/report.json"))
    listed = report["allreduce_algorithm"].split(",")
    seen = 0
    for e in json.load(open(out + "/trace.json"))["traceEvents"]:
        m = re.fullmatch(r"all-reduce bucket (\d+) \([\d.]+ MB, (\w+)\)", e.get("name", ""))
        if not m:
            continue
        seen += 1
        k, algo = int(m.group(1)), m.group(2)
        if k >= len(listed) or listed[k] != algo:
            fail(f"rank {e['pid']}: bucket {k} ran {algo}, the report lists {listed}")
    if seen == 0:
        fail("no bucket all-reduce events in the trace")

    s = report["step_seconds"]
    wait, transfer, exposed = (1e3 * s[k] for k in (
        "exposed_comm_waiting_for_slowest_backward", "exposed_comm_transfer", "exposed_comm"))
    if wait < 0 or transfer < -1e-3 or abs(wait + transfer - exposed) > 1e-3 + 1e-4 * exposed:
        fail(f"split {wait:.4f} + {transfer:.4f} ms is not the exposed {exposed:.4f} ms")
    text = subprocess.run([sys.executable, overlap, out + "/trace.json", "--skip", "0"],
                          check=True, capture_output=True, text=True).stdout
    skew = float(re.search(r"the report's figure\): ([\d.]+) ms", text).group(1))
    tail = float(re.search(r"\(tail\): ([\d.]+) ms", text).group(1))
    after = 1e3 * s["exposed_comm_after_last_backward"]
    # overlap_trace.py leaves out waits under 20 us, one per bucket.
    tolerance = 0.01 + 0.021 * len(listed) + 0.02 * wait
    if abs(skew - wait) > tolerance:
        fail(f"waiting for a slower rank's backward {wait:.4f} ms, the trace says {skew:.4f} ms")
    if after > transfer + 1e-3 or abs(tail - after) > 0.01 + 0.021 * len(listed) + 0.02 * after:
        fail(f"after the last backward {after:.4f} ms (of {transfer:.4f}), the trace says {tail:.4f}")
    hidden_trace = float(re.search(r"all-reduce span time\): ([\d.]+)", text).group(1))
    if abs(hidden_trace - report["allreduce_hidden_fraction"]) > 0.005:
        fail(f"hidden fraction {report['allreduce_hidden_fraction']:.4f}, the trace's spans say "
             f"{hidden_trace:.3f}")
    # PyTorch DDP's all-reduce time (first bucket ready to the end of the wait for the last)
    # contains every bucket's span, so its hidden fraction (1 - exposed / envelope) is never
    # below 1 - exposed / spans. (Not comparable with the figure: that one does not
    # count the training thread's wake-up after the last bucket as all-reduce time.)
    envelope, spans = report["allreduce_envelope_seconds_per_step"], report["allreduce_seconds_per_step"]
    hidden = report["allreduce_hidden_fraction_one_minus_exposed"]
    hidden_ddp = report["allreduce_hidden_fraction_ddp_definition"]
    if envelope < spans * (1 - 1e-6) or hidden_ddp < hidden - 1e-6:
        fail(f"DDP's envelope {envelope:.6f} s / hidden {hidden_ddp:.4f} below the spans' "
             f"{spans:.6f} s / {hidden:.4f}")
    if report["allreduce_start_delay_seconds_per_step"] < 0:
        fail("negative start delay")
    if report["library_spin_us"] != "0":
        fail(f"the communicator was created with CHORUS_SPIN_US={report['library_spin_us']}, "
             "not chorus-train's default 0")
    base = os.getpriority(os.PRIO_PROCESS, 0)  # the ranks inherit this process's nice
    may_lower = subprocess.run([sys.executable, "-c", "import os; os.nice(-1)"],
                               capture_output=True).returncode == 0
    want = max(-20, base - 10) - base if may_lower else 0
    if report.get("comm_thread_nice_relative") != want:
        fail(f"the communication thread's relative nice is "
             f"{report.get('comm_thread_nice_relative')}, expected {want} (nice {base}, "
             f"{'may' if may_lower else 'may not'} lower it)")
    print(f"check_report: {seen} bucket events agree with {listed}; exposed {exposed:.3f} ms = "
          f"waiting {wait:.3f} (trace {skew:.3f}) + transfer {transfer:.3f}")


if __name__ == "__main__":
    main()
