#!/usr/bin/python3
"""chorus-train benchmarks (numbers for the report; never a timed test).

  /usr/bin/python3 perf/trainer/bench.py BUILD_DIR [--reps 3] [--steps 20] [--out DIR]

Alternating runs, medians:
  1. throughput, 4 ranks vs 1 rank (default model and bucket size)
  2. the fraction of all-reduce time hidden behind backward (from the 4-rank runs)
  3. checkpoint pause, asynchronous vs blocking save of the same state (4 ranks)
  4. PyTorch DDP with gloo, same model, data order, initial weights and AdamW schedule,
     at each of --ddp-ranks (default 4), chorus-train and DDP alternating run by run:
     loss curves compared step by step, samples/s ratio (of medians, and per pair)
  5. (--parts overlap) the hidden fraction at each of --ranks (default 2,4), alternating;
     with --ab "FLAGS" every rank count also runs with FLAGS added (A/B of one change);
     each run's load average, the report's split of the exposed time (waiting for a
     slower rank's backward / all-reduce not hidden / of it, after the last backward) and
     overlap_trace.py's skew/tail split, its hidden fraction by the issue's definition
     (hidden_trace: the same for any build) and the spread of the ranks' backward ends
     (end_spread_ms) are kept. "hidden" is the report's allreduce_hidden_fraction: the
     issue's definition since 2026-12-03, 1 - exposed / all-reduce time in older builds
     (hidden_1m_exposed is that figure for every build)
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, env=None):
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit("failed: " + " ".join(cmd) + "\n" + r.stdout[-3000:])
    return r.stdout


def losses(path):
    with open(path) as f:
        return {int(r["step"]): float(r["loss"]) for r in csv.DictReader(f)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--out", default="/tmp/chorus-train-bench")
    p.add_argument("--model", default="--hidden 1024 --layers 3 --batch 64")
    p.add_argument("--parts", default="scaling,ckpt,ddp,curve",
                   help="any of scaling,ckpt,ddp,curve,overlap")
    p.add_argument("--ranks", default="2,4", help="overlap: rank counts, alternating")
    p.add_argument("--ddp-ranks", default="4", help="ddp: rank counts, alternating with chorus-train")
    p.add_argument("--ab", default="", help="overlap: also run every rank count with these flags (NAME=VALUE: a setting)")
    p.add_argument("--ab-trainer", default="", help="overlap: the --ab arm runs this chorus-train binary (A/B of two builds)")
    p.add_argument("--chorus-flags", default="", help="ddp: flags (NAME=VALUE: a setting) for chorus-train's runs")
    a = p.parse_args()
    if "overlap" in a.parts and os.sched_getscheduler(0) in (os.SCHED_FIFO, os.SCHED_RR):
        # Measured: under chrt -f 1 the communication thread never preempts its rank's
        # backward (equal real-time priorities do not share a core), so nothing overlaps.
        print("warning: real-time scheduling (chrt): the communication thread cannot run "
              "beside backward; the overlap figures then measure that, not the trainer",
              file=sys.stderr)
    launcher = os.path.join(a.build, "tools/chorus-run")
    trainer = os.path.join(a.build, "examples/dp_trainer/chorus-train")
    model = a.model.split()
    common = model + ["--steps", str(a.steps), "--eval-every", "0", "--quiet"]
    os.makedirs(a.out, exist_ok=True)

    pauses = {"async": [], "blocking": []}  # every rank's every checkpoint pause (trace)

    def train(n, name, extra=(), args=None, binary=None):
        out = os.path.join(a.out, name)
        run(["rm", "-rf", out])
        # NAME=VALUE in extra: an environment variable (a library setting) for the run
        env = dict(os.environ, **dict(x.split("=", 1) for x in extra if "=" in x and x[0].isupper()))
        flags = [x for x in extra if not ("=" in x and x[0].isupper())]
        # The CPU the job got (its processes' user+system time over the wall time): with
        # the kernel's autogroup scheduling (sched_autogroup_enabled=1 here) every other
        # session with work gets as big a share of the cores as this whole job, whatever
        # the nice level, which is what splits the np=4 runs into two throughput modes
        # (perf/trainer/README.md, eighth pass).
        before, t0 = os.times(), time.monotonic()
        run([launcher, "-n", str(n), "--timeout", "900", binary or trainer] + (args or common) + ["--out", out] + flags,
            env=env)
        after = os.times()
        cores = (after.children_user + after.children_system - before.children_user -
                 before.children_system) / (time.monotonic() - t0)
        if name in pauses:  # per rank and checkpoint: the save plus the wait for its snapshot
            with open(os.path.join(out, "trace.json")) as f:
                events = sorted((e for e in json.load(f)["traceEvents"]
                                 if e.get("name", "").startswith("checkpoint pause")),
                                key=lambda e: (e["pid"], e["ts"]))
            for e in events:
                if e["name"] == "checkpoint pause":
                    pauses[name].append(e["dur"] / 1e3)
                elif pauses[name]:
                    pauses[name][-1] += e["dur"] / 1e3
        # Steady throughput: the global batch over rank 0's median step time from step 2 on
        # (the report's samples/s is the whole loop, whose first steps carry the set-up that
        # a warm-up before the loop moves out of it)
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
        steady = float("nan")
        if os.path.exists(os.path.join(out, "metrics.csv")):
            with open(os.path.join(out, "metrics.csv")) as f:
                times = [float(r["step_seconds"]) for r in csv.DictReader(f) if int(r["step"]) > 2]
            if times:
                steady = report["global_batch"] / statistics.median(times)
        return dict(report, cores_used=cores, steady_samples_per_second=steady)

    def trace_split(name):  # overlap_trace.py's skew and tail, ms per rank-step
        text = run(["/usr/bin/python3", os.path.join(HERE, "overlap_trace.py"),
                    os.path.join(a.out, name, "trace.json")])
        ms = lambda key: float(text.split(key)[1].split(":")[1].split("ms")[0])
        return {"skew_ms": ms("(skew)"), "tail_ms": ms("(tail)"),
                # the same figures for any build, from the trace: the hidden fraction
                # and how far apart the ranks' backward passes end (median over steps)
                "hidden_trace": float(text.split("all-reduce span time):")[1].split()[0]),
                "end_spread_ms": float(text.split("(skew of ends): median")[1].split("ms")[0])}

    variants = [("", [])] + ([("ab", a.ab.split())] if a.ab or a.ab_trainer else [])
    overlap = {}  # "np<N>[-ab]" -> [{hidden, exposed_ms, allreduce_ms, samples_per_second, load}]
    init = os.path.join(a.out, "init.bin")
    res = {"one": [], "four": [], "async": [], "blocking": [], "ddp": []}
    parts = a.parts.split(",")
    for rep in range(a.reps):
        if "scaling" in parts:
            res["four"].append(train(4, "four", ["--dump-init", init]))
        if "scaling" in parts:
            res["one"].append(train(1, "one"))
        if "ckpt" in parts:
            ck = ["--ckpt-every", str(max(1, a.steps // 4))]
            res["async"].append(train(4, "async", ck))
            res["blocking"].append(train(4, "blocking", ck + ["--ckpt-blocking"]))
        if "overlap" in parts:
            for n in (int(x) for x in a.ranks.split(",")):
                for tag, flags in variants:
                    key = f"np{n}" + (f"-{tag}" if tag else "")
                    load = os.getloadavg()[0]
                    r = train(n, key, flags, binary=a.ab_trainer if tag and a.ab_trainer else None)
                    sec = r["step_seconds"]
                    overlap.setdefault(key, []).append(dict(
                        # the definition (see the README); builds before 2026-12-03
                        # reported 1 - exposed / all-reduce under this key
                        hidden=r["allreduce_hidden_fraction"],
                        hidden_1m_exposed=r.get("allreduce_hidden_fraction_one_minus_exposed",
                                                r["allreduce_hidden_fraction"]),
                        hidden_ddp=r["allreduce_hidden_fraction_ddp_definition"],
                        start_delay_ms=1e3 * r["allreduce_start_delay_seconds_per_step"],
                        exposed_ms=1e3 * r["step_seconds"]["exposed_comm"],
                        wait_slowest_ms=1e3 * sec["exposed_comm_waiting_for_slowest_backward"],
                        transfer_ms=1e3 * sec["exposed_comm_transfer"],
                        after_last_ms=1e3 * sec.get("exposed_comm_after_last_backward", float("nan")),
                        allreduce_ms=1e3 * r["allreduce_seconds_per_step"],
                        samples_per_second=r["samples_per_second"], load=load, cores_used=r["cores_used"],
                        # the job's wall time from its start (start-up and warm-up included)
                        elapsed_s=r["elapsed_seconds"],
                        steady_samples_per_second=r["steady_samples_per_second"],
                        warmup_ms=1e3 * r.get("comm_warmup_seconds", -1),
                        **trace_split(key)))
                    print(key, overlap[key][-1], flush=True)
        if "curve" in parts and rep == 0:  # a longer loss curve, smaller model
            curve = ["--hidden", "256", "--layers", "2", "--batch", "32", "--steps", "300",
                     "--eval-every", "0", "--quiet", "--dump-init", init + ".curve"]
            res["curve"] = train(4, "curve", args=curve)
            run(["/usr/bin/python3", os.path.join(HERE, "ddp_reference.py"), "--ranks", "4",
                 "--init", init + ".curve", "--out", os.path.join(a.out, "curve-ddp"), "--hidden", "256",
                 "--layers", "2", "--batch", "32", "--steps", "300"])
        if "ddp" in parts:
            for n in (int(x) for x in a.ddp_ranks.split(",")):
                load = os.getloadavg()[0]
                r = train(n, f"chorus-np{n}", ["--dump-init", init] + a.chorus_flags.split())
                ddp_out = os.path.join(a.out, f"ddp-np{n}")
                load_ddp = os.getloadavg()[0]
                text = run(["/usr/bin/python3", os.path.join(HERE, "ddp_reference.py"), "--ranks", str(n),
                            "--init", init, "--out", ddp_out, "--steps", str(a.steps)] + model)
                res["ddp"].append(dict(ranks=n, chorus=r["samples_per_second"], load_chorus=load,
                                       ddp=float(text.split("samples/s")[1].split()[0]), load_ddp=load_ddp,
                                       hidden=r["allreduce_hidden_fraction"]))
                print("ddp", res["ddp"][-1], flush=True)
        print(f"rep {rep + 1}/{a.reps} done", flush=True)

    med = lambda xs: statistics.median(xs)
    summary = {"steps": a.steps, "reps": a.reps, "model": a.model}
    if res["four"]:
        four = med([r["samples_per_second"] for r in res["four"]])
        summary["samples_per_second_4_ranks"] = four
        summary["allreduce_hidden_fraction_4_ranks"] = med([r["allreduce_hidden_fraction"] for r in res["four"]])
        summary["allreduce_ms_per_step"] = 1e3 * med([r["allreduce_seconds_per_step"] for r in res["four"]])
        summary["exposed_comm_ms_per_step"] = 1e3 * med([r["step_seconds"]["exposed_comm"] for r in res["four"]])
    if res["one"]:
        one = med([r["samples_per_second"] for r in res["one"]])
        summary["samples_per_second_1_rank"] = one
        summary["speedup_4_vs_1"] = four / one
    if res["async"]:
        pause_async = med([r["checkpoints"]["pause_seconds"] for r in res["async"]])
        pause_block = med([r["checkpoints"]["pause_seconds"] for r in res["blocking"]])
        summary["checkpoint_pause_ms_async"] = pause_async * 1e3
        summary["checkpoint_pause_ms_blocking"] = pause_block * 1e3
        summary["async_pause_over_blocking"] = pause_async / pause_block
        summary["checkpoint_pause_ms_async_all_median"] = statistics.median(pauses["async"])
        summary["checkpoint_pause_ms_async_all_min"] = min(pauses["async"])
        summary["checkpoint_pause_ms_blocking_all_median"] = statistics.median(pauses["blocking"])
        summary["checkpoint_write_ms_async"] = 1e3 * med([r["checkpoints"]["write_seconds"] for r in res["async"]])
    for n in sorted({x["ranks"] for x in res["ddp"]}):
        runs = [x for x in res["ddp"] if x["ranks"] == n]
        ours, theirs = med([x["chorus"] for x in runs]), med([x["ddp"] for x in runs])
        summary[f"np{n}_chorus_samples_per_second"] = ours
        summary[f"np{n}_ddp_gloo_samples_per_second"] = theirs
        summary[f"np{n}_chorus_over_ddp"] = ours / theirs
        pairs = [x["chorus"] / x["ddp"] for x in runs]
        summary[f"np{n}_chorus_over_ddp_per_pair"] = " ".join(f"{q:.2f}" for q in pairs)
        summary[f"np{n}_chorus_faster_in_pairs"] = f"{sum(q > 1 for q in pairs)}/{len(pairs)}"
        summary[f"np{n}_load_min_max"] = (f"{min(min(x['load_chorus'], x['load_ddp']) for x in runs):.1f}-"
                                          f"{max(max(x['load_chorus'], x['load_ddp']) for x in runs):.1f}")
        l_ours = losses(os.path.join(a.out, f"chorus-np{n}", "metrics.csv"))
        l_theirs = losses(os.path.join(a.out, f"ddp-np{n}", "metrics.csv"))
        summary[f"np{n}_loss_max_relative_difference_vs_ddp"] = max(
            abs(l_ours[s] - l_theirs[s]) / max(abs(l_theirs[s]), 1e-12) for s in l_theirs)
    if "curve" in res:
        ours = losses(os.path.join(a.out, "curve", "metrics.csv"))
        theirs = losses(os.path.join(a.out, "curve-ddp", "metrics.csv"))
        rel = [abs(ours[s] - theirs[s]) / max(abs(theirs[s]), 1e-12) for s in sorted(theirs)]
        summary["curve_steps"] = len(rel)
        summary["curve_loss_max_relative_difference"] = max(rel)
        summary["curve_loss_median_relative_difference"] = statistics.median(rel)
        summary["curve_final_loss_chorus"] = ours[max(ours)]
        summary["curve_final_loss_ddp"] = theirs[max(theirs)]
    for key, runs in overlap.items():
        for field in ("hidden", "hidden_trace", "hidden_1m_exposed", "hidden_ddp", "start_delay_ms", "exposed_ms",
                      "wait_slowest_ms", "transfer_ms", "after_last_ms", "allreduce_ms", "samples_per_second",
                      "skew_ms", "tail_ms", "end_spread_ms", "elapsed_s", "warmup_ms",
                      "steady_samples_per_second"):
            summary[f"{key}_{field}"] = med([x[field] for x in runs])
        summary[f"{key}_load_min_max"] = f"{min(x['load'] for x in runs):.1f}-{max(x['load'] for x in runs):.1f}"
    summary["load_average"] = os.getloadavg()[0]
    with open(os.path.join(a.out, "bench.json"), "w") as f:
        json.dump({"summary": summary, "runs": res, "overlap": overlap}, f, indent=1)
    for k, v in summary.items():
        print(f"{k:40s} {v:.4g}" if isinstance(v, float) else f"{k:40s} {v}")


if __name__ == "__main__":
    main()
