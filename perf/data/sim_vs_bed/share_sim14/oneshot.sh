#!/usr/bin/env bash
# Why 3x2 oneshot at 16-64 MiB measures ~0.8 of the shared NIC's bound: one bed, oneshot
# then ring at 16 and 64 MiB, per node TCP counters (nstat, absolute: a namespace's start
# at 0) and the tbf shapers' counters (node end and switch end) after each run.
# Under the lock and chrt:  flock /work/measure.lock chrt -f 1 oneshot.sh [LAYOUT]
set -u
d=$(cd "$(dirname "$0")" && pwd)/oneshot layout=${1:-3x2}
k=${layout%x*} n=${layout#*x}
cd /work/wt/sim14
bed=tests/testbed/netns_bed.sh
for algo in oneshot ring; do
  id=$($bed up "$k" 1 1000mbit) || exit 1
  o=$d/${layout}_$algo
  uptime >"$o.uptime"
  $bed run -b "$id" -n "$n" -t 300 -e CHORUS_TUNE_PROBE=1 -- build/perf/chorus-perf -t allreduce \
    -A $algo -b 16M -e 64M -f 4 -n 2 -w 1 -T 200 >"$o.log" 2>&1
  echo "rc=$?" >>"$o.log"
  uptime >>"$o.uptime"
  for i in $(seq 0 $((k - 1))); do
    echo "## node $i"
    ip netns exec ${id}n$i nstat -a 2>/dev/null | grep -E "TcpOutSegs|TcpRetransSegs|TCPTimeouts|TCPLossProbes|DelayedACKs |TCPFastRetrans|TCPSackRecovery |TcpExtTCPOFOQueue|TCPRcvQDrop|TCPBacklogDrop"
    ip netns exec ${id}n$i tc -s qdisc show | grep -A3 tbf
  done >"$o.counters"
  echo "## switch" >>"$o.counters"
  ip netns exec ${id}sw tc -s qdisc show | grep -A3 tbf >>"$o.counters"
  $bed down "$id"
done
