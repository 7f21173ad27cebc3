#!/bin/sh
# CHORUS_TRACE_STEPS with split communicators (chorus_groups_test --case split, 5 ranks):
# every communicator's trace is its own file. A split numbers its ranks its own way, so
# two processes may both be its rank 0 beside the world's: each file must be valid JSON
# of one rank, no (call, step) twice (two writers in one file), the world's files
# PREFIX.rank0..4.json and every split's PREFIX.<key prefix>.rank0..k-1.json complete.
#   trace_split_test.sh CHORUS_RUN GROUPS_TEST
set -eu
run=$1 groups=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
CHORUS_TRACE_STEPS="$dir/t" "$run" -n 5 --timeout 120 "$groups" --case split >"$dir/out" 2>&1 ||
  { tail -20 "$dir/out"; echo "FAIL: the split case failed"; exit 1; }
/usr/bin/python3 - "$dir" <<'PY'
import collections, glob, json, os, re, sys
d = sys.argv[1]
bad = []
comms = collections.defaultdict(set)  # the name before ".rankR.json" -> ranks
for path in sorted(glob.glob(os.path.join(d, "t.*json"))):
    name = os.path.basename(path)
    m = re.fullmatch(r"t\.(?:(.+)\.)?rank(\d+)\.json", name)
    if not m:
        bad.append(f"unexpected file {name}")
        continue
    try:
        events = json.load(open(path))
    except ValueError as e:
        bad.append(f"{name}: not JSON ({e})")
        continue
    pids = {e["pid"] for e in events if "pid" in e}
    if pids != {int(m.group(2))}:
        bad.append(f"{name}: events of ranks {sorted(pids)}")
    steps = collections.Counter((e["args"]["seq"], e["args"]["step"]) for e in events
                                if e.get("ph") == "X" and e.get("cat") != "call")
    twice = [k for k, n in steps.items() if n > 1]
    if twice:
        bad.append(f"{name}: {len(twice)} (call, step) pairs twice, first {twice[0]}")
    comms[m.group(1) or "world"].add(int(m.group(2)))
if comms.get("world") != set(range(5)):
    bad.append(f"world files of ranks {sorted(comms.get('world', []))}, want 0..4")
for c, ranks in comms.items():
    if ranks != set(range(len(ranks))):
        bad.append(f"{c}: files of ranks {sorted(ranks)}")
if len(comms) < 3:
    bad.append(f"only {sorted(comms)}: the splits wrote no files of their own")
for b in bad:
    print("FAIL:", b)
print(f"{sum(len(r) for r in comms.values())} trace files of {len(comms)} communicators"
      + (": ok" if not bad else ""))
sys.exit(1 if bad else 0)
PY
