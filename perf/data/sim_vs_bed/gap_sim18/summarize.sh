#!/usr/bin/env bash
# One line per recording: the --compare summary, the probe's L / o / g within and between
# nodes (the tune lines of rank 0), the probe's notes, and the load before and after.
#   summarize.sh DIR LAYOUT [UPTIME_FILE]
set -eu
dir=$1 layout=$2 up=${3:-}
log=$dir/bed_$layout.log
get() { grep -m1 "$1" "$log" | grep -o " $2=[0-9.e+-]*" | cut -d= -f2; }
for c in "tuning (probe):" "tuning between nodes"; do
  printf '%s L %s o %s g %s share %s; ' "${c%% *}" "$(get "$c" latency_us)" "$(get "$c" overhead_us)" \
    "$(get "$c" gap_us)" "$(get "$c" overhead_share)"
done
echo
grep -h "tuning probe within a node:\|tuning probe between nodes" "$log" | sed 's/.*CHORUS INFO //'
[[ -n $up && -f $up ]] && awk '{ print "load:", $0 }' "$up"
true
