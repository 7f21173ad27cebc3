#!/bin/sh
# expect_ranks.sh [--killed RANK[,RANK...]] [--count N PATTERN]... [--absent PATTERN]... [PATTERN]...
#                 -- chorus-run ARGS...
# Passes only if every rank exited as expected AND the output holds every pattern:
#  - without --killed, chorus-run must exit 0, which it does only when every rank exited 0
#    (each rank exits 0 only after checking its own result);
#  - with --killed R, rank R must have died of SIGKILL and every other rank exited 0:
#    chorus-run's summary is then exactly "1 of N ranks failed: R (SIGKILL)"; with
#    --killed "R1,R2,...", exactly those ranks died of SIGKILL (in any order);
#  - each PATTERN (grep -E) must occur at least once, "--count N PATTERN" N times or more
#    (e.g. one line per rank), no line may match an --absent PATTERN, and no line may
#    contain "FAIL".
killed=
patterns=
counts=
absent=
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    --killed) killed=$2; shift 2 ;;
    --count) counts="$counts$2	$3
"; shift 3 ;;
    --absent) absent="$absent$2
"; shift 2 ;;
    *) patterns="$patterns$1
"; shift ;;
  esac
done
[ "$1" = "--" ] || { echo "expect_ranks.sh: FAIL: no '--' before the command"; exit 2; }
shift
out=$(mktemp)
"$@" >"$out" 2>&1
rc=$?
cat "$out"
status=0
fail() { echo "expect_ranks.sh: FAIL: $*"; status=1; }
if [ -z "$killed" ]; then
  [ "$rc" -eq 0 ] || fail "exit status $rc: a rank did not exit 0 (see chorus-run's lines above)"
else
  [ "$rc" -eq 137 ] || fail "exit status $rc, expected 137 (rank $killed killed by SIGKILL)"
  # The summary's list, each rank "(SIGKILL)", sorted, against the expected list sorted.
  want=$(echo "$killed" | tr ',' '\n' | sort -n | tr '\n' ' ')
  got=$(sed -n 's/^chorus-run: \([0-9]*\) of [0-9]* ranks failed: \(.*\)$/\1:\2/p' "$out" |
    awk -F: '{ n = split($2, f, ", "); ok = n == $1
               for (i = 1; i <= n; ++i) { if (f[i] !~ / \(SIGKILL\)$/) ok = 0
                                           sub(/ .*/, "", f[i]); print f[i] }
               if (!ok) print "bad" }' | sort -n | tr '\n' ' ')
  [ "$got" = "$want" ] ||
    fail "not exactly rank(s) $killed failed (by SIGKILL): every other rank must exit 0"
fi
echo "$patterns" | while IFS= read -r p; do
  [ -z "$p" ] && continue
  grep -Eq -- "$p" "$out" || { echo "expect_ranks.sh: FAIL: no line matches '$p'"; exit 1; }
done || status=1
echo "$counts" | while IFS='	' read -r n p; do
  [ -z "$n" ] && continue
  got=$(grep -Ec -- "$p" "$out")
  [ "$got" -ge "$n" ] || { echo "expect_ranks.sh: FAIL: $got lines match '$p', want >= $n"; exit 1; }
done || status=1
echo "$absent" | while IFS= read -r p; do
  [ -z "$p" ] && continue
  ! grep -Eq -- "$p" "$out" || { echo "expect_ranks.sh: FAIL: a line matches '$p'"; exit 1; }
done || status=1
if grep -v "^expect_ranks.sh" "$out" | grep -q "FAIL"; then fail "a line says FAIL"; fi
rm -f "$out"
[ "$status" -eq 0 ] && echo "expect_ranks.sh: PASS (exit status $rc)"
exit "$status"
