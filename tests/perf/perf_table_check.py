"""perf_table_check.py RANKS COLL FILE.json...: chorus-perf's JSON (-J) against nccl-tests'
conventions (shared/design/facts.md, nccl-tests doc/PERFORMANCE.md), recomputed here:
  - one device line per rank, and the config names the collective;
  - algbw = size / time (GB = 1e9 B, time in us), busbw = algbw x the collective's factor:
    2(n-1)/n all-reduce; (n-1)/n all-gather, reduce-scatter, all-to-all; 1 broadcast,
    reduce, sendrecv; out of place and in place;
  - no wrong element (N/A only where nccl-tests prints it: see unchecked()), and "Avg bus
    bandwidth" the mean of every busbw in the table (both placements, every size), as
    nccl-tests prints it.
Exits 1 with a line per fault."""
import json
import math
import sys

FACTORS = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
}


def unchecked(coll, n, row, place):
    """Where nccl-tests prints N/A: a rank has no element (the count is split over the ranks
    in all-gather, reduce-scatter, all-to-all), or an in-place sendrecv (undefined contents)."""
    split = coll in ("allgather", "reducescatter", "alltoall")
    per_rank = row["count"] // n if split else row["count"]
    return per_rank == 0 or (coll == "sendrecv" and place == "in_place")


def close(a, b):  # the JSON has 6 significant digits
    return math.isclose(a, b, rel_tol=2e-5, abs_tol=1e-9)


def main():
    n, coll = int(sys.argv[1]), sys.argv[2]
    faults = []
    for path in sys.argv[3:]:
        d = json.load(open(path))
        if d["config"]["collective"] != coll:
            faults.append(f"{path}: collective {d['config']['collective']}, not {coll}")
        if len(d["devices"]) != n:
            faults.append(f"{path}: {len(d['devices'])} device lines for {n} ranks")
        busbws = []
        if not d["results"]:
            faults.append(f"{path}: no rows")
        for row in d["results"]:
            for place in ("out_of_place", "in_place"):
                p = row[place]
                alg = row["size"] / 1e3 / p["time"]
                where = f"{path}: {row['size']} B {place}"
                if not close(p["alg_bw"], alg):
                    faults.append(f"{where}: algbw {p['alg_bw']}, size / time gives {alg}")
                if not close(p["bus_bw"], p["alg_bw"] * FACTORS[coll](n)):
                    faults.append(f"{where}: busbw {p['bus_bw']}, algbw x factor gives "
                                  f"{p['alg_bw'] * FACTORS[coll](n)}")
                na = p["nwrong"] is None and unchecked(coll, n, row, place)
                if p["nwrong"] != 0 and not na:
                    faults.append(f"{where}: {p['nwrong']} wrong")
                busbws.append(p["bus_bw"])
        avg = d["average_bus_bandwidth"]["bandwidth"]
        if busbws and not close(avg, sum(busbws) / len(busbws)):
            faults.append(f"{path}: average busbw {avg}, the table's "
                          f"mean is {sum(busbws) / len(busbws)}")
        if d["out_of_bounds"] != {"count": 0, "okay": True}:
            faults.append(f"{path}: out of bounds {d['out_of_bounds']}")
    for f in faults:
        print("FAIL:", f)
    if not faults:
        print(f"ok: {coll} at {n} ranks, {len(sys.argv) - 3} tables")
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
