#!/usr/bin/env bash
# np 2 all-reduce over loopback TCP, 8 B-256 KiB: main's build (old) and this branch's (new)
# alternating ROUNDS times under chrt -f 1. Run under the lock:
#   flock /work/measure.lock nice -n -5 perf/data/sim_vs_bed/quickack_sim11/ab_small.sh OUTDIR [ROUNDS]
set -u
out=$1 rounds=${2:-3}
mkdir -p "$out"
old=/work/main/build new=/work/wt/sim11/build
for r in $(seq 1 "$rounds"); do
  for which in old new; do
    b=$old; [[ $which == new ]] && b=$new
    uptime >> "$out/uptime"
    CHORUS_TRANSPORT=tcp chrt -f 1 "$b/tools/chorus-run" -n 2 "$b/perf/chorus-perf" \
      -b 8 -e 256K -f 8 -n 200 -w 20 > "$out/small_np2_tcp_${which}_$r.txt" 2>&1
  done
done
uptime >> "$out/uptime"
