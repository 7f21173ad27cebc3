#!/bin/bash
# chorus-sim's own speed at scale: every all-reduce algorithm at 16,384 and 100,000 ranks on
# the presets, one run each (64 KiB and 64 MiB, no tuner), wall time and max RSS from
# /usr/bin/time -v, the algorithm's CPU seconds as chorus-sim prints them.
# Usage: perf/sim_scale.sh [OUTDIR]   (FABRICS, ALGS, RANKS override the lists)
set -u
SIM=${SIM:-$(dirname "$0")/../build/tools/chorus-sim}
OUT=${1:-/tmp/sim_scale}
mkdir -p "$OUT"
for F in ${FABRICS:-meta-roce dgx-h100 meta-ib}; do
  for N in ${RANKS:-16384 100000}; do
    for A in ${ALGS:-ring rd rhd hier hier_rd hier_rhd}; do
      f=$OUT/$F.$N.$A
      load=$(cut -d' ' -f1 /proc/loadavg)
      nice -n 5 /usr/bin/time -v timeout 600 "$SIM" --fabric "$F" --gpus "$N" -A "$A" \
        -b 64K -e 64M -f 1024 --no-tuner > "$f.out" 2> "$f.time"
      wall=$(grep "Elapsed (wall" "$f.time" | awk '{print $NF}')
      user=$(grep "User time" "$f.time" | awk '{print $NF}')
      rss=$(grep "Maximum resident" "$f.time" | awk '{print $NF}')
      cpu=$(grep "^# $A: " "$f.out" | awk '{print $3}')
      t=$(grep -v '^#' "$f.out" | awk '{printf "%s ", $6}')
      how=$(grep -v '^#' "$f.out" | head -1 | sed 's/.*# //')
      [ -z "$how" ] && how=$(grep "not replayed\|skipped" "$f.out" | head -1)
      echo "$F $N $A wall=$wall user=$user rss_kb=$rss algcpu=$cpu load=$load us(64K,64M)=$t [$how]" |
        tee -a "$OUT/summary.txt"
    done
  done
done
