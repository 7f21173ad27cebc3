#!/bin/bash
# chorus-run's options and duties that no other test covers, each checked on what the ranks
# saw or did (files they write) and chorus-run's exit status:
#   1. the launcher's variables replace inherited ones (CHORUS_RANK=7 and the like in
#      chorus-run's own environment must not reach the ranks);
#   2. SIGTERM to chorus-run goes to every rank, ends the job with 128 + 15 and starts no
#      restart (--max-restarts 3), and leaves no rank running;
#   3. --respawn K replaces a failing rank K times, with CHORUS_REJOIN 1..K, then fails
#      the job with that rank's status;
#   4. --tag-output prefixes each line with [rank], stdout to stdout and stderr to stderr,
#      an unterminated last line included;
#   5. after a failure, chorus-run prints what the ranks reported (CHORUS_REPORT_DIR): a
#      survivor's Chorus error naming the dead rank (chorus-train, rank 1 killed).
#   chorus_run_options_test.sh CHORUS_RUN CHORUS_TRAIN
set -u
run=$1 train=$2
work=$(mktemp -d /tmp/chorus-run-options.XXXXXX)
trap 'kill -9 $(cat "$work"/pid.* 2>/dev/null) 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work/log" 2>/dev/null; exit 1; }

# 1. Inherited launcher variables.
# The environment block as chorus-run execs it: env(1) run directly prints every entry,
# duplicates too (a shell would hide them: bash keeps the last, getenv finds the first).
CHORUS_RANK=7 CHORUS_WORLD_SIZE=9 CHORUS_RESTART_COUNT=9 CHORUS_REJOIN=4 \
  "$run" -n 3 --timeout 60 --tag-output env >"$work/env" 2>"$work/log" || fail "1: exited with $?"
for r in 0 1 2; do
  got=$(grep -E "^\[$r\] CHORUS_(RANK|WORLD_SIZE|RESTART_COUNT|REJOIN)=" "$work/env" | sort |
    tr '\n' ' ')
  want="[$r] CHORUS_RANK=$r [$r] CHORUS_RESTART_COUNT=0 [$r] CHORUS_WORLD_SIZE=3 "
  [ "$got" = "$want" ] || fail "1: rank $r's environment has '$got', not '$want'"
done

# 2. SIGTERM: every rank notes its pid and sleeps.
cat >"$work/sleep.sh" <<'SH'
#!/bin/bash
echo $$ >"$1/pid.$CHORUS_RANK.$CHORUS_RESTART_COUNT"
exec sleep 60
SH
chmod +x "$work/sleep.sh"
"$run" -n 2 --timeout 100 --max-restarts 3 "$work/sleep.sh" "$work" >"$work/log" 2>&1 &
launcher=$!
for _ in $(seq 200); do [ -s "$work/pid.0.0" ] && [ -s "$work/pid.1.0" ] && break; sleep 0.1; done
[ -s "$work/pid.0.0" ] && [ -s "$work/pid.1.0" ] || fail "2: the ranks did not start"
kill -TERM $launcher
for _ in $(seq 200); do kill -0 $launcher 2>/dev/null || break; sleep 0.1; done
kill -0 $launcher 2>/dev/null && fail "2: chorus-run still running 20 s after SIGTERM"
wait $launcher
status=$?
[ $status = 143 ] || fail "2: exited with $status after SIGTERM, not 143"
grep -q "restarting the job" "$work/log" && fail "2: restarted after SIGTERM"
ls "$work"/pid.*.1 >/dev/null 2>&1 && fail "2: a second launch started"
for f in "$work"/pid.*; do
  kill -0 "$(cat "$f")" 2>/dev/null && fail "2: rank pid $(cat "$f") ($f) still running"
done
rm -f "$work"/pid.*

# 3. --respawn 2: rank 1 always fails (status 5); the others finish.
cat >"$work/respawn.sh" <<'SH'
#!/bin/bash
echo "$CHORUS_RANK ${CHORUS_REJOIN:-0}" >>"$1/launches"
[ "$CHORUS_RANK" = 1 ] && exit 5
exit 0
SH
chmod +x "$work/respawn.sh"
"$run" -n 3 --timeout 60 --respawn 2 "$work/respawn.sh" "$work" >"$work/log" 2>&1
status=$?
[ $status = 5 ] || fail "3: exited with $status, not rank 1's 5"
[ "$(grep -c "starting a replacement" "$work/log")" = 2 ] || fail "3: not 2 replacements"
[ "$(grep '^1 ' "$work/launches" | cut -d' ' -f2 | tr '\n' ' ')" = "0 1 2 " ] ||
  fail "3: rank 1's launches had CHORUS_REJOIN '$(grep '^1 ' "$work/launches" | tr '\n' ' ')', not 0 1 2"
[ "$(grep -c '^[02] ' "$work/launches")" = 2 ] || fail "3: ranks 0 and 2 were launched again"

# 4. --tag-output.
cat >"$work/talk.sh" <<'SH'
#!/bin/bash
printf 'out %s\nlast %s' "$CHORUS_RANK" "$CHORUS_RANK"
printf 'err %s' "$CHORUS_RANK" >&2
SH
chmod +x "$work/talk.sh"
"$run" -n 2 --timeout 60 --tag-output "$work/talk.sh" >"$work/out" 2>"$work/err" ||
  fail "4: exited with $?"
for r in 0 1; do
  grep -qx "\[$r\] out $r" "$work/out" || fail "4: no '[$r] out $r' line on stdout"
  grep -qx "\[$r\] last $r" "$work/out" || fail "4: no '[$r] last $r' line on stdout"
  grep -qx "\[$r\] err $r" "$work/err" || fail "4: no '[$r] err $r' line on stderr"
done
[ "$(grep -c "" "$work/out")" = 4 ] || fail "4: stdout has other lines: $(cat "$work/out")"
grep -q "err" "$work/out" && fail "4: stderr on stdout"

# 5. What the ranks reported: rank 1 killed at step 5, rank 0's Chorus error.
CHORUS_RUN_GRACE=30 "$run" -n 2 --timeout 100 "$train" --hidden 16 --layers 1 --batch 8 \
  --steps 12 --eval-every 0 --quiet --timeout-s 60 --fail-at-step 5 --fail-rank 1 \
  --out "$work/train" >"$work/log" 2>&1
status=$?
[ $status = 137 ] || fail "5: exited with $status, not 137 (rank 1's SIGKILL)"
grep -A1 "^chorus-run: what the ranks reported:$" "$work/log" | tail -n 1 |
  grep -q "^  rank 0: allReduce #[0-9]* (.*): rank 1 died" ||
  fail "5: no report of rank 0's error naming dead rank 1"
echo "PASS: chorus-run's environment, SIGTERM, --respawn, --tag-output and failure reports"
