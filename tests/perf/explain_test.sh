#!/bin/sh
# `chorus-perf --explain` as a user runs it (no ranks started): the figures it names are
# the ones it uses (the defaults, or CHORUS_TUNE_FILE's entry with the nearest rank count),
# every row's starred cell is the row's smallest time and its name closes the row, -t and
# --link choose the collective and the link, and bad input is refused with exit 2 (usage)
# or 1 (an unreadable tune file). The table's arithmetic against the cost model itself is
# CostModel.ExplainTableBestIsTheSmallestPrediction.
#   explain_test.sh CHORUS_PERF
set -eu
perf=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; cat "$dir/out" 2>/dev/null | head -20; exit 1; }

# Checks a table in $dir/out: the legend names $1 and $2 ranks, the header lists the
# algorithms, 13 rows (8 B .. 64 MiB), each with exactly one starred cell that is no larger
# than any other cell of its row, and whose column's name ends the row.
check_table() {
  grep -q "^# $1, $2 ranks, link " "$dir/out" || fail "legend is not '$1, $2 ranks'"
  awk -v want_rows=13 '
    /^# / { next }
    /^ *size / { ncol = NF - 2; for (i = 2; i <= NF - 1; ++i) name[i] = $i; next }
    {
      # A row: the size is two words ("8 B"), then ncol cells, then the best name.
      if (NF != ncol + 3) { print "row has " NF " words, want " ncol + 3 ": " $0; bad = 1 }
      stars = 0; min = ""; starred = ""
      for (i = 3; i <= ncol + 2; ++i) {
        cell = $i; s = sub(/\*$/, "", cell)
        if (cell !~ /^[0-9]+(\.[0-9])?$/) { print "not a time: " $i; bad = 1 }
        if (s) { stars++; starred = cell + 0; col = i - 1 }
        if (min == "" || cell + 0 < min) min = cell + 0
      }
      if (stars != 1) { print stars " stars in: " $0; bad = 1 }
      else if (starred > min) { print "starred " starred " > row minimum " min ": " $0; bad = 1 }
      else if ($NF != name[col]) { print "best " $NF " is not the starred " name[col]; bad = 1 }
      rows++
    }
    END {
      if (ncol < 1) { print "no header"; bad = 1 }
      if (rows != want_rows) { print rows " rows, want " want_rows; bad = 1 }
      exit bad
    }' "$dir/out" || fail "table of $1 at $2 ranks"
}

"$perf" --explain 4 >"$dir/out" || fail "--explain 4 exited $?"
grep -qx '# figures: defaults' "$dir/out" || fail "default figures not named"
check_table allReduce 4
for algo in ring rd rhd oneshot twoshot; do
  grep -q "^ *size .* $algo " "$dir/out" || fail "all-reduce column $algo missing"
done
default_legend=$(grep '^# allReduce' "$dir/out")

# A tune file whose figures are unlike the defaults: the legend shows exactly them, from
# the entry with the nearest rank count, and the smallest size costs at least the latency.
cat >"$dir/tune" <<EOF
# two shm entries and a tcp one
shm ranks=2 latency_us=111.5 bytes_per_us=2000 copy_bytes_per_us=3000 reduce_bytes_per_us=4000
shm ranks=8 latency_us=222.5 bytes_per_us=5000 copy_bytes_per_us=6000 reduce_bytes_per_us=7000
tcp ranks=4 latency_us=333.5 bytes_per_us=800 copy_bytes_per_us=9000 reduce_bytes_per_us=9000
EOF
CHORUS_TUNE_FILE="$dir/tune" "$perf" --explain 3 >"$dir/out" || fail "tune file, 3 ranks"
grep -qx "# figures: $dir/tune" "$dir/out" || fail "the tune file is not named"
grep -q '^# allReduce, 3 ranks, link 111.5 us 2.00 GB/s, reduce 4.0 GB/s, copy 3.0 GB/s:' \
  "$dir/out" || fail "3 ranks did not use the ranks=2 entry's figures"
check_table allReduce 3
awk '$1 == 8 && $2 == "B" { for (i = 3; i < NF; ++i) { c = $i; sub(/\*$/, "", c)
       if (c + 0 < 111.5) exit 1 } }' "$dir/out" || fail "8 B cheaper than the latency"
CHORUS_TUNE_FILE="$dir/tune" "$perf" --explain 7 -t allgather >"$dir/out" ||
  fail "tune file, 7 ranks"
grep -q '^# allGather, 7 ranks, link 222.5 us 5.00 GB/s, reduce 7.0 GB/s, copy 6.0 GB/s:' \
  "$dir/out" || fail "7 ranks did not use the ranks=8 entry's figures"
check_table allGather 7
if grep -q "^ *size .* \(oneshot\|twoshot\|rhd\) " "$dir/out"; then
  fail "all-reduce algorithms in the all-gather table"
fi
CHORUS_TUNE_FILE="$dir/tune" "$perf" --explain 4 --link tcp -t broadcast >"$dir/out" ||
  fail "tune file, tcp"
grep -q '^# broadcast, 4 ranks, link 333.5 us 0.80 GB/s' "$dir/out" || fail "tcp entry not used"
check_table broadcast 4
# A link class without an entry keeps its defaults; tcp's are not shm's.
CHORUS_TUNE_FILE="$dir/tune" "$perf" --explain 4 --link ucx >"$dir/out" || fail "ucx"
grep -qx '# figures: defaults' "$dir/out" || fail "ucx took figures from another link's entry"
"$perf" --explain 4 --link tcp >"$dir/out" || fail "--link tcp"
check_table allReduce 4
[ "$(grep '^# allReduce' "$dir/out")" != "$default_legend" ] || fail "tcp legend = shm's"
for coll in reducescatter reduce alltoall; do
  "$perf" --explain 5 -t $coll >"$dir/out" || fail "-t $coll"
done
check_table allToAll 5

# Refusals: usage errors exit 2, an unreadable or malformed tune file exits 1 naming it.
for args in "--explain 0" "--explain x" "--explain 4 --link carrier-pigeon" \
  "--explain 4 -t allreducex"; do
  set +e
  "$perf" $args >"$dir/out" 2>&1
  code=$?
  set -e
  [ $code -eq 2 ] || fail "'$args' exited $code, want 2"
  grep -q '^usage: chorus-perf --explain' "$dir/out" || fail "'$args' printed no usage"
done
printf 'shm ranks=4 latency_us=oops\n' >"$dir/bad"
set +e
CHORUS_TUNE_FILE="$dir/bad" "$perf" --explain 4 >"$dir/out" 2>&1
code=$?
set -e
[ $code -eq 1 ] || fail "a malformed tune file exited $code, want 1"
grep -q "$dir/bad:1:" "$dir/out" || fail "the error does not name the bad line"
echo "explain test passed"
