#!/bin/bash
# chorus-train --on-failure shrink: rank 1 of 3 is SIGKILLed in step 6; the two survivors
# shrink the communicator, redo the step and finish all 20 steps on 2 ranks, reporting the
# shrink. chorus-run still reports the dead rank (non-zero), the survivors exit 0.
set -u
run=$1 train=$2
work=$(mktemp -d /tmp/chorus-trainer-shrink.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work/log"; exit 1; }
CHORUS_RUN_GRACE=200 "$run" -n 3 --timeout 150 "$train" --hidden 48 --layers 2 --batch 16 \
  --steps 20 --eval-every 0 --bucket-mb 0.004 --lr 0.01 --timeout-s 60 --quiet \
  --on-failure shrink --fail-at-step 6 --fail-rank 1 --out "$work/out" >"$work/log" 2>&1
status=$?
[ $status = 137 ] || fail "chorus-run exited with $status, expected 137 (rank 1 SIGKILLed)"
grep -q "rank 1 (pid [0-9]*) killed by signal SIGKILL" "$work/log" || fail "rank 1 was not the one killed"
grep -q "rank [02] (pid" "$work/log" && fail "a survivor failed"
r="$work/out/report.json"
grep -q '"ranks": 2,' "$r" || fail "the report does not end on 2 ranks"
grep -q '"shrinks": \[{"step": 6, "dead": \[1\],' "$r" || fail "the report lacks the shrink at step 6"
tail -1 "$work/out/progress.txt" | grep -q '^20 ' || fail "did not finish 20 steps"
cat "$work/log"
echo "PASS: survivors shrank and finished"
