#!/bin/bash
# chorus-train --on-failure grow: rank 1 of 3 is SIGKILLed in step 6; chorus-run --respawn 1
# starts a replacement (CHORUS_REJOIN=1) that joins with Communicator::joinFromEnv; the
# survivors shrink, then grow() back to 3 ranks and hand it their state by broadcast.
#   1. reference: 3 ranks, 20 steps, no failure
#   2. --grow-wait: the survivors wait for the replacement and redo step 6 at full size
#      from the state of the end of step 5 and the same batch, so the final weights
#      (rank 0's, --save-final) are bit-identical to the reference
#   3. without --grow-wait: the survivors train on 2 ranks until the replacement is
#      pending, then grow; the job ends on 3 ranks with the grow in the report (the
#      weights differ from the reference: some steps ran with a 2-rank global batch);
#      --hold-for-join-at-step 19 holds them at step 19 should the replacement be later
#   4. late: --grow-wait --grow-wait-s 1, and the replacement asks to join only at step 12,
#      long after the survivors gave up waiting (--join-after-file <out>/holding-for-join,
#      which rank 0 writes at the start of step 12, where --hold-for-join-at-step makes the
#      survivors wait for it, so that the step is known): they carry on with 2 ranks from
#      step 6 and admit it at step 12 instead of failing
# chorus-run exits 0 both times: the replacement's success stands for rank 1.
set -u
run=$1 train=$2
work=$(mktemp -d /tmp/chorus-trainer-grow.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; for l in "$work"/*.log; do echo "== $l"; cat "$l"; done; exit 1; }
common=(--hidden 48 --layers 2 --batch 16 --steps 20 --eval-every 0 --bucket-mb 0.004
        --lr 0.01 --timeout-s 60 --quiet)
export CHORUS_RUN_GRACE=60

"$run" -n 3 --timeout 120 "$train" "${common[@]}" --out "$work/ref" --save-final "$work/ref.bin" \
  >"$work/ref.log" 2>&1 || fail "the reference run failed"

for mode in wait carry-on late; do
  flags=()
  [ $mode = wait ] && flags=(--grow-wait)
  # carry-on: if the replacement is not pending by step 19 (its start raced 14 short steps),
  # the survivors wait for it there, so the job still ends on 3 ranks.
  [ $mode = carry-on ] && flags=(--hold-for-join-at-step 19)
  [ $mode = late ] && flags=(--grow-wait --grow-wait-s 1 --join-after-file "$work/late/holding-for-join"
                             --hold-for-join-at-step 12)
  "$run" -n 3 --timeout 120 --respawn 1 "$train" "${common[@]}" --on-failure grow "${flags[@]}" \
    --fail-at-step 6 --fail-rank 1 --out "$work/$mode" --save-final "$work/$mode.bin" \
    >"$work/$mode.log" 2>&1
  status=$?
  [ $status = 0 ] || fail "$mode: chorus-run exited with $status"
  grep -q "rank 1 (pid [0-9]*) killed by signal SIGKILL; starting a replacement (CHORUS_REJOIN=1" \
    "$work/$mode.log" || fail "$mode: chorus-run did not replace rank 1"
  grep -q "launch rank 1 joined as rank 1 of 3 at step" "$work/$mode.log" ||
    fail "$mode: the replacement did not join as rank 1 of 3"
  r="$work/$mode/report.json"
  grep -q '"ranks": 3,' "$r" || fail "$mode: the report does not end on 3 ranks"
  grep -q '"shrinks": \[{"step": 6, "dead": \[1\],' "$r" || fail "$mode: no shrink at step 6"
  grep -q '"grows": \[{"step": [0-9]*, "ranks_after": 3,' "$r" || fail "$mode: no grow to 3 ranks"
  tail -1 "$work/$mode/progress.txt" | grep -q '^20 ' || fail "$mode: did not finish 20 steps"
done
grep -q '"grows": \[{"step": 6, "ranks_after": 3,' "$work/wait/report.json" ||
  fail "wait: the grow was not at the redo of step 6"
cmp "$work/ref.bin" "$work/wait.bin" || fail "wait: final weights differ from the reference"
grep -q "no replacement joined within 1.0 s (--grow-wait-s); carrying on with 2 ranks" \
  "$work/late.log" || fail "late: the survivors did not give up waiting and carry on"
grep -q '"grows": \[{"step": 12, "ranks_after": 3,' "$work/late/report.json" ||
  fail "late: the late replacement was not admitted at step 12"
cat "$work/wait.log"
echo "PASS: the replacement joined, the job grew back to 3 ranks, weights bit-identical with --grow-wait; a late replacement joined at step 12"
