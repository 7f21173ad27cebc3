#!/bin/bash
# chorus-train --step-per-bucket steps the optimizer on each bucket once it is averaged, into spare
# buffers swapped in only when the whole step is done. A rank that dies half way through
# that leaves the survivors with buckets already stepped; they must drop them and redo the
# step from its starting state. Checked against a run whose rank dies mid-backward, before
# any bucket is averaged, in the same step: the final weights must be bit-identical.
#   B: rank 1 of 3 is SIGKILLed at step 4 once its bucket 0 is averaged and stepped
#   A: rank 1 of 3 is SIGKILLed mid-backward in the step B's survivors shrank at (4, or 5
#      when they had already finished step 4), the reference
set -u
run=$1 train=$2
work=$(mktemp -d /tmp/chorus-trainer-midstep.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work"/*.log; exit 1; }
common=(--hidden 48 --layers 2 --batch 16 --steps 8 --eval-every 0 --bucket-mb 0.004 --step-per-bucket
        --lr 0.01 --timeout-s 60 --quiet --on-failure shrink --fail-rank 1)
export CHORUS_RUN_GRACE=100
"$run" -n 3 --timeout 100 "$train" "${common[@]}" --fail-at-step 4 --fail-after-bucket 0 \
  --out "$work/b" --save-final "$work/b.bin" >"$work/b.log" 2>&1
[ $? = 137 ] || fail "B: chorus-run did not report the SIGKILLed rank"
grep -q "rank [02] (pid" "$work/b.log" && fail "B: a survivor failed"
step=$(grep -o '"shrinks": \[{"step": [0-9]*' "$work/b/report.json" | grep -o '[0-9]*$')
[ "$step" = 4 ] || [ "$step" = 5 ] || fail "B: shrink at step '$step', expected 4 or 5"
"$run" -n 3 --timeout 100 "$train" "${common[@]}" --fail-at-step "$step" \
  --out "$work/a" --save-final "$work/a.bin" >"$work/a.log" 2>&1
[ $? = 137 ] || fail "A: chorus-run did not report the SIGKILLed rank"
grep -q "\"shrinks\": \[{\"step\": $step," "$work/a/report.json" || fail "A: no shrink at step $step"
[ -s "$work/a.bin" ] && [ -s "$work/b.bin" ] || fail "final weights missing"
grep "survivors shrank" "$work/b.log"
cmp "$work/a.bin" "$work/b.bin" || fail "weights differ: the half-stepped step was not dropped"
echo "PASS: a step that failed after some buckets were stepped was redone from its start"
