#!/usr/bin/env bash
# Now one shared script does this for any tree or build: perf/sim_vs_bed_round.sh SRC_OR_BUILD DIR LAYOUT [SUFFIX].
# The bed's agreement with this branch's build (ranks bind and yield by the machine's ranks),
# one round, under chrt -f 1 and the lock, as sim10 and sim11 ran it:  run_bed.sh LAYOUT [SUFFIX]
set -u
d=$(cd "$(dirname "$0")" && pwd) layout=$1 suffix=${2:-}
src=/work/wt/sim13
uptime >>"$d/svb_$layout$suffix.uptime"
(cd $src && flock /work/measure.lock chrt -f 1 perf/sim_vs_bed.sh 1000 "$layout" 1 "$d/rec$suffix") \
  >"$d/svb_$layout$suffix.txt" 2>&1
uptime >>"$d/svb_$layout$suffix.uptime"
