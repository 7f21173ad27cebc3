#!/usr/bin/env bash
# The recordings' --compare with the probe's L / o replaced by the old two-point formula's on
# the same round trips (split.py's "old formula"; its o at the ping-pong's share, within
# 2/3 on 3x2 and 1 on 2x2, between 1): what the simulator's agreement would have been had the
# probe split the same times as before. The bed's measured table and tuner picks unchanged.
#   old_formula_compare.sh DIR LAYOUT
set -eu
d=$(cd "$(dirname "$0")" && pwd) dir=$1 layout=$2
tmp=$(mktemp -d)
cp "$dir/bed_$layout.txt" "$tmp/"
read -r wl wo bl bo < <(python3 "$d/split.py" "$dir/bed_$layout.log" | head -1 |
  sed -E 's/.*old formula: within L +([0-9.]+) o +([0-9.]+) between L +([0-9.]+) o +([0-9.]+).*/\1 \2 \3 \4/')
ws=1; [[ $layout == 3x2 ]] && ws=0.6667
awk -v wl="$wl" -v wo="$wo" -v bl="$bl" -v bo="$bo" -v ws="$ws" '
  /tuning \(probe\):/ { sub(/latency_us=[0-9.e+-]+/, "latency_us=" wl); sub(/overhead_us=[0-9.e+-]+/, "overhead_us=" wo); sub(/overhead_share=[0-9.e+-]+/, "overhead_share=" ws) }
  /tuning between nodes/ { sub(/latency_us=[0-9.e+-]+/, "latency_us=" bl); sub(/overhead_us=[0-9.e+-]+/, "overhead_us=" bo); sub(/overhead_share=[0-9.e+-]+/, "overhead_share=1") }
  { print }' "$dir/bed_$layout.log" >"$tmp/bed_$layout.log"
(cd "$d/../../../.." && perf/sim_vs_bed.sh --compare "$tmp" "$layout")
rm -rf "$tmp"
