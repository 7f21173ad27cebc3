#!/usr/bin/env bash
# Every recording the guard (tests/sim/bed_agreement_test.sh) holds, and the small-size
# ones (sim_vs_bed/gap_sim18/rec_small*, small_sim19/rec_small*), re-scored by a chorus-sim
# build: one line per recording, "dir layout within-25%/points =measured =tuner (guard)".
# The model variant comes from the environment, as perf/sim_vs_bed.sh takes it: CORE_POOL=1
# (the host's cores as a pool), 2 (and o and g at the call's share); with a pool,
# POOL_WAITERS_SPIN=1 and POOL_BOUND_CORES=1. The three recordings without a log keep their
# recorded fabric, with the variant's keys appended. KEEP=DIR keeps every comparison table.
#   [CORE_POOL=1|2 [POOL_WAITERS_SPIN=1] [POOL_BOUND_CORES=1]] [KEEP=DIR] sim_rescore.sh CHORUS_SIM
# (The re-score scripts under perf/data/sim_vs_bed/ call this one with the variant they ran.)
set -u
sim=${1:?usage: sim_rescore.sh CHORUS_SIM} root=$(cd "$(dirname "$0")/.." && pwd)
want=$(sed -n '/^want="/,/"$/p' "$root/tests/sim/bed_agreement_test.sh" | tr -d '"' | sed 's/^want=//')
small=$(cd "$root/perf/data" && for d in sim_vs_bed/gap_sim18/rec_small* sim_vs_bed/small_sim19/rec_small*; do
  for f in "$d"/bed_*.txt; do [[ -f $f ]] && l=${f##*/bed_} && echo "$d:${l%.txt}:0:0"; done; done)
pool=${CORE_POOL:-0}
for w in $want $small; do
  IFS=: read -r dir layout min picks <<<"$w"
  tmp=$(mktemp -d)
  cp "$root/perf/data/$dir/bed_$layout".* "$tmp/"  # --compare rewrites the fabric from the log
  if [[ $pool != 0 && ! -f $tmp/bed_$layout.log ]]; then
    echo "core_pool 1" >>"$tmp/bed_$layout.fabric"
    [[ $pool == 2 ]] && echo "pool_overhead_at_call_share 1" >>"$tmp/bed_$layout.fabric"
    [[ ${POOL_WAITERS_SPIN:-0} == 1 ]] && echo "pool_waiters_spin 1" >>"$tmp/bed_$layout.fabric"
    [[ ${POOL_BOUND_CORES:-0} == 1 ]] && echo "pool_bound_cores 1" >>"$tmp/bed_$layout.fabric"
  fi
  line=$(CORE_POOL=$pool SIM=$sim "$root/perf/sim_vs_bed.sh" --compare "$tmp" "$layout" | tee "$tmp/out" | grep "^# $layout: ")
  [[ -n ${KEEP:-} ]] && mkdir -p "$KEEP/$dir" && cp "$tmp/out" "$KEEP/$dir/compare_$layout.txt"
  rm -rf "$tmp"
  sed -E "s|^# [^:]+: ([0-9]+) of ([0-9]+) within 25%; simulated winner = measured at ([0-9]+) of [0-9]+ sizes, = tuner pick at ([0-9]+)|$dir $layout \1/\2 \3 \4 (guard $min/$picks)|" <<<"$line"
done
