#!/usr/bin/env bash
# The tuner's picks on this machine (one host: the call's share is the node's, so only the
# overhead's rescaling differs), main's build (207027b, copied to /tmp/sim14_mainbuild) and
# this branch's alternating, under the lock:  tuner_ab.sh PAIRS
set -u
d=$(cd "$(dirname "$0")" && pwd)/tuner_ab pairs=${1:-2}
cd /work/wt/sim14
for i in $(seq "${FIRST:-1}" "$pairs"); do
  for b in main new; do
    if [[ $b == main ]]; then build=/tmp/sim14_mainbuild; export LD_LIBRARY_PATH=/tmp/sim14_mainbuild
    else build=build; unset LD_LIBRARY_PATH; fi
    echo "# $b $i start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$d/runs.txt"
    flock /work/measure.lock perf/tuner_accuracy.sh -p "4 2" -K 5 -B "$build" >"$d/${b}_$i.txt" 2>&1
    echo "# $b $i end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) rc $?" >>"$d/runs.txt"
  done
done
