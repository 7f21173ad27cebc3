#!/usr/bin/env bash
# What the probe costs at communicator creation on one host (shm, np 2 and np 4): main's
# build and this branch's alternating, N pairs, "tuning probe took" from rank 0's log.
#   probe_cost.sh N OUT
set -u
n=$1 out=$2 src=/work/wt/sim17
uptime >"$out"
for np in ${NPS:-2 4}; do
  for i in $(seq 1 "$n"); do
    for b in main sim17; do
      [[ $b == main ]] && build=/work/main/build || build=$src/build
      ms=$(CHORUS_TUNE_PROBE=1 CHORUS_DEBUG=INFO timeout 60 "$build/tools/chorus-run" -n $np --tag-output \
        "$build/perf/chorus-perf" -t allreduce -b 8 -e 8 -n 1 -w 0 2>&1 |
        sed -n 's/^\[0\].*tuning probe took \([0-9.]*\) ms.*/\1/p')
      echo "np $np $b $ms" >>"$out"
    done
  done
done
uptime >>"$out"
