#!/usr/bin/env bash
# The tuning probe alone on the netns bed, main's build and this branch's alternating, N
# times each: the probe's figures (and this branch's logged round trips of 1, 4 and 8
# messages, within and between nodes) and what the probe cost ("tuning probe took").
# One 64 KiB all-reduce after it. Under chrt -f 1 and the lock, as the recordings:
#   probe_loop.sh LAYOUT N OUTDIR
set -u
layout=$1 n=$2 out=$3 k=${1%x*} r=${1#*x}
d=$(cd "$(dirname "$0")" && pwd)
src=/work/wt/sim17
mkdir -p "$out"
uptime >>"$out/uptime"
for i in $(seq 1 "$n"); do
  for b in main sim17; do
    [[ $b == main ]] && build=/work/main/build || build=$src/build
    (cd $src && chrt -f 1 tests/testbed/netns_bed.sh run -k "$k" -m 1 -r 1000mbit -n "$r" -t 120 \
      -e CHORUS_TUNE_PROBE=1 -e CHORUS_DEBUG=INFO -- \
      "$build/perf/chorus-perf" -t allreduce -b 64K -e 64K -n 1 -w 0) >"$out/${b}_$i.log" 2>&1
  done
done
uptime >>"$out/uptime"
