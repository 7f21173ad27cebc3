#!/usr/bin/env bash
# twoshot and rd at 256 B on the 3x2 bed under perf sched record (docs/sim.md, twentieth
# session): sched.sh OUTDIR ALGO [PERF]; run as flock /work/measure.lock chrt -f 1 sched.sh ...
set -u
out=$1 algo=$2 perf=${3:-$PWD/build/perf/chorus-perf}
mkdir -p "$out"
uptime >"$out/uptime.$algo"
perf sched record -a -o "$out/sched.$algo.data" -- tests/testbed/netns_bed.sh run -k 3 -m 1 -r 1000mbit -n 2 -t 120 \
  -e CHORUS_TUNE_PROBE=1 -- "$perf" -t allreduce -A "$algo" -b 256 -e 256 -f 2 -K 1 -n 2 -w 1 -T 500 >"$out/log.$algo" 2>&1
uptime >>"$out/uptime.$algo"
