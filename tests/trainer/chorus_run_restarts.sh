#!/bin/bash
# chorus-run --max-restarts: a failed launch is started again with CHORUS_RESTART_COUNT
# 1, 2, ... and a fresh rendezvous (another store port), up to K times; no restart after
# the --timeout.
#   chorus_run_restarts.sh CHORUS_RUN
set -u
run=$1
work=$(mktemp -d /tmp/chorus-run-restarts.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work/log" 2>/dev/null; exit 1; }
# Rank 1 fails on launches 0 and 1; every rank notes its launch and store port.
cat >"$work/rank.sh" <<'SH'
#!/bin/bash
echo "$CHORUS_RESTART_COUNT $CHORUS_RANK $CHORUS_PORT" >>"$1/launches"
[ "$CHORUS_RANK" = 1 ] && [ "$CHORUS_RESTART_COUNT" -lt 2 ] && exit 7
exit 0
SH
chmod +x "$work/rank.sh"

"$run" -n 3 --timeout 60 --max-restarts 3 "$work/rank.sh" "$work" >"$work/log" 2>&1 ||
  fail "3 restarts allowed, 2 needed: exited with $?"
[ "$(grep -c 'restarting the job' "$work/log")" = 2 ] || fail "expected 2 restarts"
[ "$(wc -l <"$work/launches")" = 9 ] || fail "expected 3 launches of 3 ranks"
for k in 0 1 2; do
  [ "$(grep -c "^$k " "$work/launches")" = 3 ] || fail "launch $k did not start 3 ranks with CHORUS_RESTART_COUNT=$k"
done
[ "$(cut -d' ' -f3 "$work/launches" | sort -u | wc -l)" = 3 ] || fail "the launches shared a rendezvous port"

rm -f "$work/launches"
"$run" -n 3 --timeout 60 --max-restarts 1 "$work/rank.sh" "$work" >"$work/log" 2>&1
status=$?
[ $status = 7 ] || fail "1 restart allowed, 2 needed: expected rank 1's status 7, got $status"
[ "$(grep -c 'restarting the job' "$work/log")" = 1 ] || fail "expected 1 restart"

"$run" -n 2 --timeout 1 --max-restarts 3 sleep 30 >"$work/log" 2>&1
status=$?
[ $status = 124 ] || fail "timeout: expected 124, got $status"
grep -q 'restarting the job' "$work/log" && fail "restarted after the timeout"
echo "PASS: chorus-run --max-restarts"
