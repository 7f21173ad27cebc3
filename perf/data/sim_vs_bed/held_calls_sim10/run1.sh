#!/usr/bin/env bash
# one bed run: NAME EXTRA_BED_ARGS... ; 3x2 hier_rd 256K 1 s, step trace, perf sched record
set -u
name=$1; shift
d=/tmp/sim10x/$name; rm -rf $d; mkdir -p $d
perfbin=${PERFBIN:-/work/main/build/perf/chorus-perf}
cd /work/wt/sim10
uptime > $d/uptime
cat /proc/14/schedstat /proc/24/schedstat > $d/ksoft.before
perf sched record -a -o $d/sched.data -- tests/testbed/netns_bed.sh run -k 3 -m 1 -r ${RATE:-1000mbit} -n 2 -t 120 \
  -e CHORUS_TUNE_PROBE=1 -e CHORUS_DEBUG=INFO -e CHORUS_TRACE_STEPS=$d/t "$@" -- \
  $perfbin -t allreduce -A ${ALGO:-hier_rd} -b 256K -e 256K -f 1 -K 1 -n 2 -w 1 -T ${MS:-1000} > $d/log 2>&1
echo rc=$? >> $d/log
cat /proc/14/schedstat /proc/24/schedstat > $d/ksoft.after
uptime >> $d/uptime
