#!/bin/sh
# chorus-topo as a user runs it: --xml, --sysfs and --topo-file reach the detection (a
# recorded two-socket host, its sysfs tree and a topology file, each changing what is
# printed), --json is JSON with the same figures, --cluster under chorus-run groups the
# ranks by --topo-file or CHORUS_TOPO_FILE (nodes, local ranks, the node-major ring), and
# bad input exits 2 (usage) or 1 (an unreadable file). Expected values are read off the
# recorded files (tests/data/topology).
#   topo_cli_test.sh CHORUS_TOPO CHORUS_RUN SOURCE_DIR
set -eu
topo=$1 run=$2 src=$3
data=$src/tests/data/topology
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; cat "$dir/out" 2>/dev/null | head -30; exit 1; }
has() { grep -qxF -- "$1" "$dir/out" || fail "no line '$1'"; }

# The XML alone: the host, its NUMA nodes; NICs from this machine's /sys would differ, so
# only what the XML fixes is checked here.
"$topo" --xml "$data/fake_2socket.xml" >"$dir/out" || fail "--xml exited $?"
has "host fake2s: 2 package(s), 2 NUMA node(s), 8 core(s), 8 PU(s)"
has "  numa 1: package 1, cpus 4-7, 65536 MiB"
# With the sysfs tree: the ports' speeds and states (the XML knows no speeds).
"$topo" --xml "$data/fake_2socket.xml" --sysfs "$data/sysfs_2nic" >"$dir/out" || fail "--sysfs"
has "  nic ib0: up, 200 Gbit/s, numa 0, pci 0000:17:00.0, rdma mlx5_0"
has "  nic eth1: up, 25 Gbit/s, numa 1, pci 0000:b1:00.0"
has "  nic mlx5_1: up, 100 Gbit/s, numa 1, pci 0000:ca:00.0, rdma mlx5_1"
has "  from: [hwloc xml $data/fake_2socket.xml] [sysfs $data/sysfs_2nic]"
# The topology file overrides: ib0 at 400Gb/s, eth1 down (host fake2s), a NIC rail9 and
# GPU 0's name added, and the nvlink (its second line for the pair replaces the first).
"$topo" --xml "$data/fake_2socket.xml" --sysfs "$data/sysfs_2nic" \
  --topo-file "$data/cluster.topo" >"$dir/out" || fail "--topo-file"
has "  nic ib0: up, 400 Gbit/s, numa 0, pci 0000:17:00.0, rdma mlx5_0"
has "  nic eth1: down, 25 Gbit/s, numa 1, pci 0000:b1:00.0"
has "  nic rail9: up, 800 Mbit/s, numa 1, pci 0000:ca:00.1, rdma mlx5_9"
has "  gpu 0: h100-0, numa 0, pci 0000:18:00.0"
has "  link gpu 1 - gpu 0: nvlink, 400 GB/s"
# The same as JSON.
"$topo" --json --xml "$data/fake_2socket.xml" --sysfs "$data/sysfs_2nic" \
  --topo-file "$data/cluster.topo" >"$dir/out" || fail "--json"
/usr/bin/python3 - "$dir/out" "$data" <<'PY' || fail "the JSON"
import json, sys
t = json.load(open(sys.argv[1]))
nics = {n["name"]: n for n in t["nics"]}
want = {"ib0": (400000, True, 0), "eth1": (25000, False, 1), "rail9": (800, True, 1),
        "mlx5_1": (100000, True, 1), "docker0": (0, False, -1)}
bad = [f"{k}: {nics.get(k)}" for k, (mbps, up, numa) in want.items()
       if k not in nics or (nics[k]["speed_mbps"], nics[k]["up"], nics[k]["numa"]) != (mbps, up, numa)]
if (t["hostname"], t["packages"], t["cores"], t["pus"]) != ("fake2s", 2, 8, 8):
    bad.append(f"host {t['hostname']} {t['packages']} {t['cores']} {t['pus']}")
if [g["name"] for g in t["gpus"]] != ["h100-0", "cuda1"]:
    bad.append(f"gpus {t['gpus']}")
d = sys.argv[2]
if t["sources"] != [f"hwloc xml {d}/fake_2socket.xml", f"sysfs {d}/sysfs_2nic",
                    f"file {d}/cluster.topo"]:
    bad.append(f"sources {t['sources']}")
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
PY

# --cluster: 4 ranks as two nodes by --topo-file; 9 as three by CHORUS_TOPO_FILE.
# (--topo-file wins over CHORUS_TOPO_FILE, which says 4 nodes of 1 here.)
CHORUS_TOPO_FILE="$src/tests/multiproc/nodes_4x1.topo" "$run" -n 4 --timeout 60 "$topo" \
  --cluster --topo-file "$src/tests/multiproc/nodes_2x2.topo" >"$dir/out" 2>&1 ||
  fail "--cluster 2x2"
has "cluster: 4 ranks, 2 nodes (uniform), ring: 0 1 2 3"
for r in 0 1 2 3; do
  grep -q "^rank $r: node $((r / 2)) ($(echo ab | cut -c$((r / 2 + 1)))) of 2 nodes, local rank $((r % 2)) of 2, nic " \
    "$dir/out" || fail "rank $r's line"
done
CHORUS_TOPO_FILE="$src/tests/multiproc/nodes_3x3.topo" "$run" -n 9 --timeout 60 "$topo" \
  --cluster >"$dir/out" 2>&1 || fail "--cluster 3x3"
has "cluster: 9 ranks, 3 nodes (uniform), ring: 0 3 6 1 4 7 2 5 8"
for r in 0 1 2 3 4 5 6 7 8; do
  grep -q "^rank $r: node $((r % 3)) ($(echo abc | cut -c$((r % 3 + 1)))) of 3 nodes, local rank $((r / 3)) of 3, nic " \
    "$dir/out" || fail "rank $r's line (3x3)"
done
# No topology file: one host, so one node of every rank.
env -u CHORUS_TOPO_FILE "$run" -n 3 --timeout 60 "$topo" --cluster >"$dir/out" 2>&1 ||
  fail "--cluster, one host"
grep -q "^cluster: 3 ranks, 1 nodes" "$dir/out" || fail "one host is not one node"

# Refusals.
set +e
"$topo" --bogus >"$dir/out" 2>&1; code=$?
set -e
[ $code -eq 2 ] || fail "--bogus exited $code, want 2"
grep -q "^usage: chorus-topo" "$dir/out" || fail "--bogus printed no usage"
set +e
"$topo" --xml >"$dir/out" 2>&1; code=$?  # the flag without its value
set -e
[ $code -eq 2 ] || fail "--xml without a file exited $code, want 2"
set +e
"$topo" --xml "$dir/missing.xml" >"$dir/out" 2>&1; code=$?
set -e
[ $code -eq 1 ] || fail "a missing XML file exited $code, want 1"
grep -q "missing.xml" "$dir/out" || fail "the error does not name the missing file"
echo "chorus-topo command test passed"
