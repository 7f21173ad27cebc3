#!/usr/bin/env bash
# The policy A/B at 64 KiB: main's build (binding and yielding by the ranks of a node, i.e. of
# a network namespace) against this branch's (by the ranks of the machine), alternating,
# every algorithm (-A each), under chrt -f 1 and the lock:  ab_64k.sh LAYOUT PAIRS
set -u
d=$(cd "$(dirname "$0")" && pwd) layout=$1 pairs=${2:-2}
k=${layout%x*} n=${layout#*x}
for ((i = 1; i <= pairs; ++i)); do
  for which in main sim13; do
    src=/work/main; [[ $which == sim13 ]] && src=/work/wt/sim13
    uptime >>"$d/ab_$layout.uptime"
    flock /work/measure.lock chrt -f 1 $src/tests/testbed/netns_bed.sh run -k "$k" -m 1 -r 1000mbit \
      -n "$n" -t 300 -e CHORUS_TUNE_PROBE=1 -e CHORUS_DEBUG=INFO -- \
      $src/build/perf/chorus-perf -t allreduce -A each -b 64K -e 64K -K 1 -n 2 -w 1 -T 200 \
      >"$d/ab_${layout}_${which}_$i.log" 2>&1
  done
done
uptime >>"$d/ab_$layout.uptime"
