#!/usr/bin/env bash
# An older recording's --compare with the gap g this branch's probe would have derived from
# the same round trips (same probe times): where the log's probe note says "slope above the
# half trip", g = that slope (LinkModel::gapUs), added to the class's tune line as gap_us;
# elsewhere none. The bed's measured table and tuner picks unchanged.
#   rescore_with_gap.sh DIR LAYOUT   (prints --compare's output, with and without g)
set -eu
d=$(cd "$(dirname "$0")" && pwd) dir=$1 layout=$2
root=$(cd "$d/../../../.." && pwd)
tmp=$(mktemp -d)
cp "$dir/bed_$layout.txt" "$tmp/"
awk '
  # The note (probe_figures.cpp): "o X us: slope above the half trip (fastest rounds'"'"' slope S us)"
  function slopeOf(line,   m) { return match(line, /slope [0-9.e+-]+ us\)/) ? substr(line, RSTART + 6, RLENGTH - 9) : "" }
  /tuning probe within a node:/ && /above the half trip/ { gw = slopeOf($0) }
  /tuning probe between nodes \(us\)/ && /above the half trip/ { gb = slopeOf($0) }
  /tuning \(probe\):/ && gw != "" { $0 = $0 " gap_us=" gw }
  /tuning between nodes/ && gb != "" { $0 = $0 " gap_us=" gb }
  { print }' "$dir/bed_$layout.log" >"$tmp/bed_$layout.log"
echo "## $dir $layout with g: $(grep -o 'gap_us=[0-9.e+-]*' "$tmp/bed_$layout.log" | tr '\n' ' ')"
(cd "$root" && perf/sim_vs_bed.sh --compare "$tmp" "$layout")
grep -E '^(gap_us|nic_gap_us|overhead_us)' "$tmp/bed_$layout.fabric" || true
rm -rf "$tmp"
