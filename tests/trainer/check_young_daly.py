"""check_young_daly.py REPORT_DIR STEPS [--mtbf S | --mtbf-from-failures]: checks chorus-train's
checkpoint interval against Young-Daly, recomputed here from the measured inputs the report
lists (checkpoints.young_daly), and the saves the run made against that interval:
  - the save measured after step 3 of the launch (start + 3);
  - interval = max(sqrt(2 x pause x MTBF), background write), to the report's 6 digits;
  - every = max(1, round(interval / step time)) steps (either neighbour within 1e-3 of .5);
  - the MTBF is the one given (--mtbf) or, with --mtbf-from-failures, the job's elapsed time
    per failure seen: failures were seen, and the MTBF is positive and at most the whole
    job's elapsed time (at the end) over their number;
  - the count of saves (the last launch's) is 1 + the steps s after the measured one with (s + 1) % every == 0
    and s + 1 < STEPS, and the newest checkpoint kept is the last of those.
Exits 1 with a line per fault."""
import json
import math
import os
import sys

from verdict import verdict


def main():
    out, steps = sys.argv[1], int(sys.argv[2])
    given = float(sys.argv[4]) if sys.argv[3:4] == ["--mtbf"] else None
    report = json.load(open(os.path.join(out, "report.json")))
    ck = report["checkpoints"]
    yd = ck["young_daly"]
    faults = []
    if yd is None:
        print("FAIL: no Young-Daly interval in the report:", ck)
        return 1
    start = report["failures"][-1]["resumed_from"] if report["failures"] else 0
    if yd["after_step"] != start + 3:
        faults.append(f"measured after step {yd['after_step']}, not {start + 3}")
    mtbf = yd["mtbf_seconds"]
    if given is not None:
        if yd["mtbf_from_failures"] or not math.isclose(mtbf, given, rel_tol=1e-5):
            faults.append(f"MTBF {mtbf} s (from failures: {yd['mtbf_from_failures']}), not {given}")
    elif not (yd["mtbf_from_failures"] and report["failures"]
              and 0 < mtbf <= report["elapsed_seconds"] / len(report["failures"])):
        faults.append(f"MTBF {mtbf} s is not the job's time per failure: "
                      f"{len(report['failures'])} failures in {report['elapsed_seconds']} s")
    want = max(math.sqrt(2 * yd["pause_seconds"] * mtbf), yd["write_seconds"])
    if not math.isclose(yd["interval_seconds"], want, rel_tol=1e-4):
        faults.append(f"interval {yd['interval_seconds']} s, Young-Daly gives {want} s")
    steps_per = want / yd["step_seconds"]
    every = ck["every_steps"]
    allowed = {max(1, round(steps_per))}
    if abs(steps_per - math.floor(steps_per) - 0.5) < 1e-3:
        allowed = {max(1, math.floor(steps_per)), max(1, math.ceil(steps_per))}
    if every not in allowed:
        faults.append(f"every {every} steps, {want} s / {yd['step_seconds']} s gives {allowed}")
    saves = [yd["after_step"] + 1] + [s + 1 for s in range(yd["after_step"] + 1, steps)
                                      if every > 0 and (s + 1) % every == 0 and s + 1 < steps]
    if ck["count"] != len(saves):
        faults.append(f"{ck['count']} saves, the interval gives {len(saves)}: {saves}")
    kept = sorted(d for d in os.listdir(os.path.join(out, "ckpt")) if d.startswith("step-"))
    if not kept or int(kept[-1][5:]) != saves[-1]:
        faults.append(f"newest checkpoint {kept[-1:]} is not step {saves[-1]}")
    return verdict(faults, f"ok: every {every} steps = Young-Daly {want:.4g} s / {yd['step_seconds']:.4g} s "
              f"per step (MTBF {mtbf:.4g} s), {len(saves)} saves")


if __name__ == "__main__":
    sys.exit(main())
