#!/usr/bin/env bash
# Step traces of small all-reduces on the netns bed (docs/sim.md, twentieth session):
#   trace.sh LAYOUT OUTDIR [PERF]   (run as: flock /work/measure.lock chrt -f 1 trace.sh ...)
# Every algorithm at 256 B, 4 KiB and 16 KiB, 200 ms each, CHORUS_TRACE_STEPS=OUTDIR/t.
set -u
layout=$1 out=$2 perf=${3:-$PWD/build/perf/chorus-perf}
k=${layout%x*} n=${layout#*x}
mkdir -p "$out"
uptime >"$out/uptime"
tests/testbed/netns_bed.sh run -k "$k" -m 1 -r 1000mbit -n "$n" -t 300 -e CHORUS_TUNE_PROBE=1 \
  -e CHORUS_DEBUG=INFO -e CHORUS_TRACE_STEPS="$out/t" -- \
  "$perf" -t allreduce -A each -b 256 -e 16K -f 4 -K 1 -n 2 -w 1 -T 200 >"$out/bed.log" 2>&1
echo "rc=$?" >>"$out/bed.log"
uptime >>"$out/uptime"
