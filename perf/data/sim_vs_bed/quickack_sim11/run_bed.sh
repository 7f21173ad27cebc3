#!/usr/bin/env bash
# The bed's agreement, main's build (before) then this branch's (after), one round each,
# under chrt -f 1 and the lock, as sim10 ran it:  run_bed.sh LAYOUT [ROUND_SUFFIX]
set -u
d=$(cd "$(dirname "$0")" && pwd) layout=$1 suffix=${2:-}
for which in before after; do
  src=/work/main; [[ $which == after ]] && src=/work/wt/sim11
  uptime >> "$d/svb_$layout$suffix.uptime"
  (cd $src && chrt -f 1 perf/sim_vs_bed.sh 1000 "$layout" 1 "$d/$which$suffix") > "$d/svb_${which}_$layout$suffix.txt" 2>&1
done
uptime >> "$d/svb_$layout$suffix.uptime"
