"""check_metrics.py OUT_DIR STEPS EVAL_EVERY LR WARMUP DECAY MIN_RATIO METRIC [LOW HIGH]:
chorus-train's metrics.csv and held-out figures against their definitions:
  - the header, one row per step 1..STEPS of launch 0;
  - the lr column = the schedule recomputed here (linear warm-up over WARMUP steps from
    LR/WARMUP, then cosine / linear decay to LR x MIN_RATIO at STEPS, or none), as printed;
  - a held-out value on exactly the steps that are multiples of EVAL_EVERY, within
    [LOW, HIGH] (accuracy: 0..1; perplexity: 1 .. the 256 byte values);
  - the report's held_out_METRIC (evaluated after the last step) = the last step's value:
    the same parameters;
  - training lowered the loss: the last step's below the first's;
  - perplexity: its log within 0.5 nats of the final training loss (an undertrained model).
Exits 1 with a line per fault."""
import csv
import json
import math
import os
import sys

from verdict import verdict


def lr_at(step, lr, warmup, steps, decay, floor):
    if step < warmup:
        return lr * (step + 1) / warmup
    if decay == "none":
        return lr
    t = min(1.0, (step - warmup) / max(1, steps - warmup))
    shape = 0.5 * (1 + math.cos(math.pi * t)) if decay == "cosine" else 1 - t
    return lr * (floor + (1 - floor) * shape)


def main():
    out, steps, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    lr, warmup, decay, floor = float(sys.argv[4]), int(sys.argv[5]), sys.argv[6], float(sys.argv[7])
    metric = sys.argv[8]
    low, high = (float(sys.argv[9]), float(sys.argv[10])) if len(sys.argv) > 10 else (0, 1)
    faults = []
    with open(os.path.join(out, "metrics.csv")) as f:
        rows = list(csv.reader(f))
    if rows[0] != ["restart", "step", "loss", "lr", "step_seconds", "held_out"]:
        faults.append(f"header {rows[0]}")
    rows = rows[1:]
    if [(r[0], int(r[1])) for r in rows] != [("0", s) for s in range(1, steps + 1)]:
        faults.append(f"rows {[(r[0], r[1]) for r in rows]}, not steps 1..{steps} of launch 0")
    for r in rows:
        s = int(r[1])
        want = lr_at(s - 1, lr, warmup, steps, decay, floor)
        if not math.isclose(float(r[3]), want, rel_tol=1e-5):
            faults.append(f"step {s}: lr {r[3]}, the schedule gives {want:.6g}")
        if (s % every == 0) != (r[5] != ""):
            faults.append(f"step {s}: held-out '{r[5]}' (evaluated every {every})")
        elif r[5] and not low <= float(r[5]) <= high:
            faults.append(f"step {s}: held-out {metric} {r[5]} outside [{low}, {high}]")
    report = json.load(open(os.path.join(out, "report.json")))
    final = report[f"held_out_{metric}"]
    if steps % every == 0 and not math.isclose(final, float(rows[-1][5]), rel_tol=1e-5):
        faults.append(f"the report's held-out {metric} {final}, the last step's {rows[-1][5]}")
    # Perplexity is exp(held-out cross-entropy); 12 steps of a tiny model learn too little
    # for that to stand far from the training loss (nats) on other text of the same file.
    if metric == "perplexity" and not abs(math.log(final) - report["final_loss"]) < 0.5:
        faults.append(f"log(perplexity {final}) = {math.log(final):.3f} is not near the "
                      f"training loss {report['final_loss']}")
    if not float(rows[-1][2]) < float(rows[0][2]):
        faults.append(f"the loss went from {rows[0][2]} to {rows[-1][2]}")
    return verdict(faults, f"ok: {steps} steps, lr as scheduled ({decay}), held-out {metric} "
              f"{[r[5] for r in rows if r[5]]}, loss {rows[0][2]} -> {rows[-1][2]}")


if __name__ == "__main__":
    sys.exit(main())
