#!/usr/bin/env bash
# Throwaway experiment (--compare only, nothing in the model changes): the fabric of a
# recording with g = the bursts' slope in every probe (within: gap_us, between: nic_gap_us,
# not only where it exceeds o's bound), charged at the call's share, and o NOT rescaled to
# the call's share (overhead_us pre-multiplied by the fabric's cpu share, which the replay
# divides by again): a single message pays the probe's own L + 2 o, a burst g a message.
#   slope_gap_experiment.sh DIR LAYOUT [O_FACTOR]   (O_FACTOR: o x this, default 1)
set -eu
d=$(cd "$(dirname "$0")" && pwd) dir=$1 layout=$2 factor=${3:-1}
root=$(cd "$d/../../../.." && pwd)
k=${layout%x*} n=${layout#*x}
t1=$(mktemp -d) t2=$(mktemp -d)
cp "$dir/bed_$layout.txt" "$dir/bed_$layout.log" "$t1/"
(cd "$root" && perf/sim_vs_bed.sh --compare "$t1" "$layout" >/dev/null)
slope() { grep -m1 "$1" "$dir/bed_$layout.log" | sed -E 's/.*slope ([0-9.e+-]+) us\).*/\1/'; }
sw=$(slope "tuning probe within a node:") sb=$(slope "tuning probe between nodes (us)")
cp "$dir/bed_$layout.txt" "$t2/"
awk -v sw="$sw" -v sb="$sb" -v ranks=$((k * n)) -v f="$factor" '
  /^host_cores/ { cores = $2 } /^host_load/ { load = $2 }
  { line[NR] = $0 }
  END {
    share = cores / (ranks + load); if (share > 1) share = 1
    for (i = 1; i <= NR; ++i) {
      $0 = line[i]
      if ($1 == "overhead_us") $0 = "overhead_us " $2 * share * f
      if ($1 == "gap_us" || $1 == "nic_gap_us") continue
      print
    }
    print "gap_us " sw; print "nic_gap_us " sb
  }' "$t1/bed_$layout.fabric" >"$t2/bed_$layout.fabric"
echo "## $dir $layout: slopes within $sw between $sb; $(grep -E '^overhead_us' "$t2/bed_$layout.fabric")"
(cd "$root" && perf/sim_vs_bed.sh --compare "$t2" "$layout")
rm -rf "$t1" "$t2"
