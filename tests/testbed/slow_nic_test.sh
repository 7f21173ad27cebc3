#!/usr/bin/env bash
# Striping under a path that slows down mid-transfer (label `topology`): 2 nodes x 2 NICs
# at RATE, one rank per node, all-reduces of 16 MiB checked by chorus-perf; after the
# first seconds rail1 drops to RATE/10 in both directions on both nodes. The run must
# finish with every element right and both NICs used.
#   slow_nic_test.sh BUILD_DIR [RATE_MBIT=300]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bed=$here/netns_bed.sh build=$1 mbit=${2:-300}
log=$(mktemp /tmp/chorus-slow-nic.XXXXXX)
id=$("$bed" up 2 2 "${mbit}mbit")
rc=$?
[[ $rc == 77 ]] && exit 77
[[ $rc != 0 || -z $id ]] && { echo "slow_nic_test: FAIL: bed up ($rc)"; exit 1; }
trap '"$bed" down "$id"; rm -f "$log"' EXIT
slow=$((mbit / 10))mbit
( sleep 3
  for n in 0 1; do
    ip netns exec "${id}n$n" tc qdisc change dev rail1 root tbf rate "$slow" burst 262144 latency 50ms
    ip netns exec "${id}sw" tc qdisc change dev "n${n}r1" root tbf rate "$slow" burst 262144 latency 50ms
  done
  echo "slow_nic_test: rail1 now at $slow" ) &
slower=$!
"$bed" run -b "$id" -n 1 -t 240 -e CHORUS_SOCKET_IFNAME=rail -e CHORUS_DEBUG=INFO -- \
  "$build/perf/chorus-perf" -b 16M -e 16M -n 12 -w 1 -T 0 -c 3 >"$log" 2>&1
rc=$?
wait "$slower"
grep -E "rail|Out of bounds|^\[0\] +[0-9]" "$log" | grep -v "reduce\." | tail -12
[[ $rc == 0 ]] || { echo "slow_nic_test: FAIL: the run failed ($rc)"; tail -20 "$log"; exit 1; }
grep -q "Out of bounds values : 0 OK" "$log" || { echo "slow_nic_test: FAIL: wrong results"; exit 1; }
grep -q "rail1" "$log" || { echo "slow_nic_test: FAIL: rail1 never used"; exit 1; }
echo "slow_nic_test: passed"
