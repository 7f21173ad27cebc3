#!/usr/bin/env bash
# Striping over several NICs in the netns test bed: 2 nodes x 2 NICs at RATE each, one
# rank per node, all-reduce of SIZE; compares (a) one NIC, (b) both NICs at RATE, (c) both
# NICs with the second at RATE/2. Runs alternate; prints the median time and the speed
# relative to one NIC. Needs root.   perf/bed_striping.sh [RATE_MBIT=300] [SIZE=32M] [REPS=3]
set -euo pipefail
cd "$(dirname "$0")/.."
mbit=${1:-300} size=${2:-32M} reps=${3:-3}
bed=tests/testbed/netns_bed.sh perf=$PWD/build/perf/chorus-perf
id=$($bed up 2 2 "${mbit}mbit" | tail -1)
trap '$bed down "$id"' EXIT
rate_of() {  # the second NIC's rate, both directions, both nodes
  for n in 0 1; do
    ip netns exec "${id}n$n" tc qdisc change dev rail1 root tbf rate "$1" burst 262144 latency 50ms
    ip netns exec "${id}sw" tc qdisc change dev "n${n}r1" root tbf rate "$1" burst 262144 latency 50ms
  done
}
run() {  # IFNAME -> time in us of one all-reduce
  $bed run -b "$id" -n 1 -t 300 -e CHORUS_SOCKET_IFNAME="$1" -e CHORUS_TUNE_PROBE=0 -- \
    "$perf" -b "$size" -e "$size" -n 3 -w 1 -T 0 -c 1 2>&1 |
    awk '/^\[0\] +[0-9]/ {print $7; exit}'
}
declare -A t
for ((r = 0; r < reps; ++r)); do
  rate_of "${mbit}mbit"
  t[one]+=" $(run =rail0)"
  t[two]+=" $(run rail)"
  rate_of "$((mbit / 2))mbit"
  t[half]+=" $(run rail)"
done
median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
one=$(median "${t[one]}") two=$(median "${t[two]}") half=$(median "${t[half]}")
echo "# all-reduce of $size, 2 nodes x 1 rank, NICs at ${mbit} Mbit/s; median of $reps; time (us):"
echo "one NIC:                 $one"
echo "two NICs at R:           $two  ($(awk -v a="$one" -v b="$two" 'BEGIN {printf "%.2f", a / b}')x one NIC; ideal 2)"
echo "NICs at R and R/2:       $half  ($(awk -v a="$one" -v b="$half" 'BEGIN {printf "%.2f", a / b}')x one NIC; ideal 1.5, target >= 1.35)"
