#!/usr/bin/env bash
# The twentieth session's recordings (docs/sim.md): one 64 KiB-64 MiB round each of 3x2 and
# 2x2, then 256 B-16 KiB rounds of both, all with perf/sim_vs_bed_round.sh (chrt -f 1 under
# /work/measure.lock), this tree's build.
set -u
cd "$(dirname "$0")/../../../.."
d=perf/data/sim_vs_bed/small_sim19
perf/sim_vs_bed_round.sh build "$d" 3x2
perf/sim_vs_bed_round.sh build "$d" 2x2
BEGIN=256 END=16K perf/sim_vs_bed_round.sh build "$d" 3x2 _small
BEGIN=256 END=16K perf/sim_vs_bed_round.sh build "$d" 2x2 _small
