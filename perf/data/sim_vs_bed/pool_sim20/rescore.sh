#!/usr/bin/env bash
# Every recording the guard (tests/sim/bed_agreement_test.sh) holds, and the small-size
# ones (gap_sim18/rec_small*, small_sim19/rec_small*), re-scored by a chorus-sim build, as
# small_sim19/rescore_all.sh does, with the host's cores as a pool when CORE_POOL=1 (2: o and
# g kept at the call's share; also in the three recordings without a log, whose fabric is
# taken as recorded: the keys are appended to it); KEEP=DIR keeps every comparison table:
#   [CORE_POOL=1|2] [KEEP=DIR] rescore.sh CHORUS_SIM   prints dir layout within-25% / points, = measured, = tuner
set -u
sim=$1 root=$(cd "$(dirname "$0")/../../../.." && pwd)
want=$(sed -n '/^want="/,/"$/p' "$root/tests/sim/bed_agreement_test.sh" | tr -d '"' | sed 's/^want=//')
small=$(cd "$root/perf/data" && for d in sim_vs_bed/gap_sim18/rec_small* sim_vs_bed/small_sim19/rec_small*; do
  for f in "$d"/bed_*.txt; do [[ -f $f ]] && l=${f##*/bed_} && echo "$d:${l%.txt}:0:0"; done; done)
for w in $want $small; do
  IFS=: read -r dir layout min picks <<<"$w"
  tmp=$(mktemp -d)
  cp "$root/perf/data/$dir/bed_$layout".* "$tmp/"  # --compare rewrites the fabric from the log
  if [[ ${CORE_POOL:-0} != 0 && ! -f $tmp/bed_$layout.log ]]; then
    echo "core_pool 1" >>"$tmp/bed_$layout.fabric"
    [[ $CORE_POOL == 2 ]] && echo "pool_overhead_at_call_share 1" >>"$tmp/bed_$layout.fabric"
  fi
  line=$(SIM=$sim "$root/perf/sim_vs_bed.sh" --compare "$tmp" "$layout" | tee "$tmp/out" | grep "^# $layout: ")
  [[ -n ${KEEP:-} ]] && mkdir -p "$KEEP/$dir" && cp "$tmp/out" "$KEEP/$dir/compare_$layout.txt"
  rm -rf "$tmp"
  sed -E "s|^# [^:]+: ([0-9]+) of ([0-9]+) within 25%; simulated winner = measured at ([0-9]+) of [0-9]+ sizes, = tuner pick at ([0-9]+)|$dir $layout \1/\2 \3 \4 (guard $min/$picks)|" <<<"$line"
done
