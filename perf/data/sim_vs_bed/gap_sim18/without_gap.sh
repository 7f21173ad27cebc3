#!/usr/bin/env bash
# A recording of this branch's --compare with the probe's gap_us taken out of its tune
# lines (the simulator without g, the same probe otherwise): g's own effect on the counts.
#   without_gap.sh DIR LAYOUT
set -eu
d=$(cd "$(dirname "$0")" && pwd) dir=$1 layout=$2
root=$(cd "$d/../../../.." && pwd)
tmp=$(mktemp -d)
cp "$dir/bed_$layout.txt" "$tmp/"
sed -E 's/ gap_us=[0-9.e+-]+//' "$dir/bed_$layout.log" >"$tmp/bed_$layout.log"
(cd "$root" && perf/sim_vs_bed.sh --compare "$tmp" "$layout")
rm -rf "$tmp"
