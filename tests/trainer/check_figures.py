"""check_figures.py REPORT_DIR INPUTS HIDDEN LAYERS CLASSES [BUCKET_MB]: chorus-train's
headline figures (report.json) against their definitions, recomputed here for an MLP of
LAYERS hidden layers of HIDDEN units between INPUTS inputs and CLASSES outputs:
  - parameters = weights + biases; flops_per_sample = 6 x weights (forward 2, backward 4);
  - samples_per_second = global_batch / step time, achieved_flops = that x flops_per_sample,
    mfu = achieved / peak_gemm_flops, in (0, 1);
  - a step's time holds its compute, exposed communication and checkpoint pause;
  - useful_seconds = steps x (compute + exposed communication) per step, and
    effective_training_time = min(1, useful / elapsed);
  - with BUCKET_MB, the gradient buckets (bucket_floats, in all-reduce order): every
    parameter and the loss riding in the first (parameters + 1 floats in all), each bucket
    but the last at least BUCKET_MB (it closes on the group that reaches it; a group is at
    most half a bucket plus a bias row, so below twice that), and as many buckets as that
    allows: at least floor(floats / (2 x bucket)).
Exits 1 with a line per fault."""
import json
import math
import os
import sys

from verdict import verdict


def main():
    out = sys.argv[1]
    inputs, hidden, layers, classes = (int(a) for a in sys.argv[2:6])
    r = json.load(open(os.path.join(out, "report.json")))
    dims = [inputs] + [hidden] * layers + [classes]
    weights = sum(a * b for a, b in zip(dims, dims[1:]))
    faults = []

    def near(name, got, want, tol=1e-4):
        if not math.isclose(got, want, rel_tol=tol, abs_tol=1e-12):
            faults.append(f"{name} {got}, its definition gives {want}")

    near("parameters", r["parameters"], weights + sum(dims[1:]))
    near("flops_per_sample", r["flops_per_sample"], 6 * weights)
    s = r["step_seconds"]
    near("samples_per_second", r["samples_per_second"], r["global_batch"] / s["total"])
    near("achieved_flops", r["achieved_flops"], r["samples_per_second"] * r["flops_per_sample"])
    near("mfu", r["mfu"], r["achieved_flops"] / r["peak_gemm_flops"])
    if not 0 < r["mfu"] < 1:
        faults.append(f"mfu {r['mfu']} outside (0, 1)")
    parts = s["compute"] + s["exposed_comm"] + s["checkpoint_pause"]
    if parts > s["total"] * (1 + 1e-4):
        faults.append(f"a step's parts take {parts} s, more than the step's {s['total']} s")
    near("useful_seconds", r["useful_seconds"], r["steps"] * (s["compute"] + s["exposed_comm"]))
    near("effective_training_time", r["effective_training_time"],
         min(1.0, r["useful_seconds"] / r["elapsed_seconds"]))
    if len(sys.argv) > 6:
        bucket = float(sys.argv[6]) * 1e6 / 4  # floats
        sizes = r["bucket_floats"]
        if sum(sizes) != r["parameters"] + 1:
            faults.append(f"buckets {sizes} hold {sum(sizes)} floats, not the "
                          f"{r['parameters']:.0f} parameters + the loss")
        if any(not bucket <= b < 2 * bucket + hidden for b in sizes[:-1]):
            faults.append(f"buckets {sizes}: all but the last must be {bucket:.0f} to "
                          f"{2 * bucket + hidden:.0f} floats")
        if len(sizes) < sum(sizes) // (2 * bucket):
            faults.append(f"{len(sizes)} buckets of {sizes} for {bucket:.0f}-float buckets")
    return verdict(faults, f"ok: {r['flops_per_sample']:.0f} FLOP per sample, MFU {r['mfu']:.4f}, "
              f"effective training time {r['effective_training_time']:.4f}"
              + (f", buckets {r['bucket_floats']}" if len(sys.argv) > 6 else ""))


if __name__ == "__main__":
    sys.exit(main())
