#!/usr/bin/env bash
# chorus-sim against a recorded measurement of the netns test bed (perf/data/sim_vs_bed/:
# the measured busbw table and the bed's fabric from the same run's tuning probe, both
# written by perf/sim_vs_bed.sh). Deterministic: measures nothing, simulates the recorded
# fabric and compares with the recorded table through the script's own --compare. Checks:
# every layout compares 48 points (8 algorithms x 6 sizes), at least MIN of them within
# 25% (the agreement reached when the file was recorded: a model change that loses it
# fails here), and the simulated winner equals the bed tuner's pick at every size.
#   bed_agreement_test.sh path/to/chorus-sim repo-root
set -euo pipefail
sim=$1 root=$2
# layout:minimum within 25% (recorded: see the header of each bed_*.txt)
want="2x2:18"
out=$(SIM=$sim "$root/perf/sim_vs_bed.sh" --compare "$root/perf/data/sim_vs_bed" "2x2")
echo "$out"
bad=0
for w in $want; do
  layout=${w%:*} min=${w#*:}
  line=$(grep "^# $layout: " <<<"$out") || { echo "no summary for $layout"; bad=1; continue; }
  read -r within total tuner < <(sed -E 's/^# [^:]+: ([0-9]+) of ([0-9]+) within.*tuner pick at ([0-9]+)$/\1 \2 \3/' <<<"$line")
  sizes=$(sed -E 's/.*measured at [0-9]+ of ([0-9]+) sizes.*/\1/' <<<"$line")
  if ((total != 48 || sizes != 6)); then echo "$layout: $total points, $sizes sizes (expected 48, 6)"; bad=1; fi
  if ((within < min)); then echo "$layout: $within within 25%, recorded $min"; bad=1; fi
  if ((tuner != sizes)); then echo "$layout: simulated winner = tuner pick at $tuner of $sizes sizes"; bad=1; fi
done
exit $bad
