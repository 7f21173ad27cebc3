#!/bin/bash
# UCX with one worker against one worker per NIC (CHORUS_UCX_NET_DEVICES=auto), and tcp
# over the same NICs, alternating in one netns bed (needs root): K nodes x M NICs at RATE,
# one rank per node, all-reduce busbw out of place and in place per round.
#   perf/ucx_rails_bed.sh [BUILD=build] [ROUNDS=3] [RATE=1gbit] [K=2] [M=2]
# Prints "round variant size busbw_out busbw_in"; take medians per variant and size.
set -uo pipefail
build=${1:-build} rounds=${2:-3} rate=${3:-1gbit} k=${4:-2} m=${5:-2}
bed=$(dirname "$0")/../tests/testbed/netns_bed.sh
id=$("$bed" up "$k" "$m" "$rate") || exit 1
trap '"$bed" down "$id"' EXIT
echo "# load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((round = 1; round <= rounds; ++round)); do
  for v in "ucx1:CHORUS_NET=ucx" "ucxauto:CHORUS_NET=ucx CHORUS_UCX_NET_DEVICES=auto" \
    "tcp:CHORUS_NET=tcp"; do
    name=${v%%:*} args=()
    for e in ${v#*:}; do args+=(-e "$e"); done
    timeout 200 "$bed" run -b "$id" -n 1 -t 180 "${args[@]}" -- \
      "$build/perf/chorus-perf" -b 1M -e 64M -f 4 -n 5 -w 1 -c 1 2>&1 |
      awk -v n="$name" -v r="$round" '/^\[0\] +[0-9]/ { print r, n, $2, $8, $12 }'
  done
done
echo "# load $(cut -d' ' -f1-3 /proc/loadavg)"
