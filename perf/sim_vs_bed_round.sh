#!/usr/bin/env bash
# One recorded round of perf/sim_vs_bed.sh (the netns bed at 1000 Mbit/s, one round, under
# chrt -f 1 and the machine-wide measurement lock, as docs/sim.md's recordings ran it since
# sim10), with the load (uptime) before and after. What each session's run_bed.sh under
# perf/data/sim_vs_bed/ did with its own worktree's path written in.
#   perf/sim_vs_bed_round.sh SRC_OR_BUILD OUTDIR LAYOUT [SUFFIX]
# SRC_OR_BUILD: a source tree with its build in build/ (its own perf/sim_vs_bed.sh runs), or
# a build directory (this tree's script runs that build's chorus-perf and chorus-sim).
# Writes OUTDIR/rec$SUFFIX/ (the bed's log, table, fabric), OUTDIR/svb_$LAYOUT$SUFFIX.txt
# (the comparison) and OUTDIR/svb_$LAYOUT$SUFFIX.uptime. Needs root.
set -u
if (($# < 3)); then
  echo "usage: $0 SRC_OR_BUILD OUTDIR LAYOUT [SUFFIX]" >&2
  exit 2
fi
from=$(cd "$1" && pwd) layout=$3 suffix=${4:-}
mkdir -p "$2"
out=$(cd "$2" && pwd)
if [[ -x $from/perf/sim_vs_bed.sh ]]; then
  tree=$from
else
  tree=$(cd "$(dirname "$0")/.." && pwd)
  export PERF=$from/perf/chorus-perf SIM=$from/tools/chorus-sim
fi
uptime >>"$out/svb_$layout$suffix.uptime"
(cd "$tree" && flock /work/measure.lock chrt -f 1 perf/sim_vs_bed.sh 1000 "$layout" 1 "$out/rec$suffix") \
  >"$out/svb_$layout$suffix.txt" 2>&1
uptime >>"$out/svb_$layout$suffix.uptime"
