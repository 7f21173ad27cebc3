#!/usr/bin/env bash
# One rank's error after a cut between two nodes (chorus_fault_trial's line "rank R: ERROR
# after <ms> ms: <message>"), checked as every cut test wants it (bed_test.sh cutoff over
# tcp and ucx, tests/rdma/node_suite.sh's cutoff part over ib):
#   - it came within LIMIT_MS of the failed call's start;
#   - it names the collective that failed and its sequence number ("rank R: allReduce #12 (");
#   - it names a rank of the other side (OTHER, an ERE alternation such as "2|3") that
#     cannot be reached;
#   - each such rank once per observer ("... from rank M"; this rank's own where none is
#     named: its connection's error);
#   - no rank across the cut is called one that is merely not waiting (its host does not
#     answer: that is all this side can know).
#
# Usage: cutoff_check.sh RANK OTHER LIMIT_MS LINE
# Exit: 0 when the line passes; 1 with the first failed check on stdout.
set -uo pipefail
(($# == 4)) || { echo "usage: cutoff_check.sh RANK OTHER LIMIT_MS LINE"; exit 2; }
r=$1 other=$2 limit_ms=$3 line=$4
fail() {
  echo "$*"
  exit 1
}
ms=$(sed -n "s/.*rank $r: ERROR after \([0-9]*\) ms: .*/\1/p" <<<"$line")
[[ -n $ms ]] || fail "rank $r reported no error"
((ms < limit_ms)) || fail "rank $r failed after $ms ms (limit $limit_ms)"
grep -Eq "ERROR after [0-9]+ ms: rank $r: [a-zA-Z]+ #[0-9]+ \(" <<<"$line" ||
  fail "rank $r's error does not name the collective and its sequence number"
grep -Eq "rank ($other) cannot be reached" <<<"$line" ||
  fail "rank $r does not name a rank of the other side ($other) that cannot be reached"
for x in ${other//|/ }; do
  twice=$(grep -oE "rank $x cannot be reached(: [0-9]+ resends or probes in a row from rank [0-9]+)?" <<<"$line" |
    sed -E "s/.* from rank ([0-9]+)$/\1/; s/^rank .*/$r/" | sort | uniq -d)
  [[ -z $twice ]] || fail "rank $r says more than once, as seen from rank $twice, that rank $x cannot be reached"
done
if grep -Eq "rank ($other) is not waiting in any collective" <<<"$line"; then
  fail "rank $r calls a rank across the cut not waiting, where its host cannot be reached"
fi
exit 0
