#!/usr/bin/env bash
# Held calls and delayed ACKs, sim10's run (3x2 bed, 1 Gbit/s, hier_rd 256 KiB for 1 s,
# step trace, nstat per node), main's build then this branch's, ROUNDS times alternating.
# Under the lock and chrt:  flock /work/measure.lock chrt -f 1 held.sh OUTDIR [ROUNDS]
set -u
out=$1 rounds=${2:-2}
here=$(cd "$(dirname "$0")" && pwd)
bed=/work/wt/sim11/tests/testbed/netns_bed.sh
for r in $(seq 1 "$rounds"); do
  for which in main new; do
    perfbin=/work/main/build/perf/chorus-perf
    [[ $which == new ]] && perfbin=/work/wt/sim11/build/perf/chorus-perf
    d=$out/${which}_$r; rm -rf "$d"; mkdir -p "$d"
    id=$($bed up 3 1 1000mbit) || exit 1
    for n in 0 1 2; do ip netns exec ${id}n$n nstat -n >/dev/null; done
    uptime > "$d/uptime"
    $bed run -b "$id" -n 2 -t 120 -e CHORUS_TUNE_PROBE=1 -e CHORUS_DEBUG=INFO -e CHORUS_TRACE_STEPS=$d/t -- \
      $perfbin -t allreduce -A hier_rd -b 256K -e 256K -f 1 -K 1 -n 2 -w 1 -T 1000 > "$d/log" 2>&1
    echo rc=$? >> "$d/log"
    uptime >> "$d/uptime"
    for n in 0 1 2; do ip netns exec ${id}n$n nstat -a 2>/dev/null | grep -E "DelayedACK"; done > "$d/nstat"
    $bed down "$id"
    printf "%-8s %s  dACKs %d\n" "${which}_$r" "$(python3 "$here/held_summary.py" "$d")" \
      "$(awk '$1=="TcpExtDelayedACKs" {s+=$2} END {print s+0}' "$d/nstat")"
  done
done
