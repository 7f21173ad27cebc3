#!/bin/bash
# chorus-train survives SIGKILLed ranks and ends with the very same weights.
#   1. reference: 2 ranks, 24 steps, no failures, no checkpoints; its report checked
#      against its trace, its figures and buckets against their definitions
#      (check_figures.py); the same run with 3 bucket all-reduces in flight (and the
#      library's polling set by the user, CHORUS_SPIN_US=200, and the training thread
#      yielding after each GEMM, --gemm-yield on, and without the warm-up all-reduces
#      before the first step, --no-comm-warmup): same weights
#   2. rank 1 killed at step 7, rank 0 at step 15; chorus-run --max-restarts 3 relaunches,
#      each launch resumes from the newest good checkpoint: final weights bit-identical
#      (blocking saves: resumes at 4 and 12 exactly; asynchronous saves: wherever written)
#   3. a failed job leaves checkpoints 4, 8, 12; shard of 12 corrupted, manifest of 8
#      torn: a new launch rejects both, resumes from 4 and ends bit-identical again
set -u
run=$1 train=$2
work=$(mktemp -d /tmp/chorus-trainer-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
common=(--hidden 48 --layers 2 --batch 16 --steps 24 --eval-every 0 --bucket-mb 0.004
        --lr 0.01 --warmup 3 --quiet --timeout-s 60)
export CHORUS_RUN_GRACE=30
fail() { echo "FAIL: $*"; exit 1; }

"$run" -n 2 --timeout 120 "$train" "${common[@]}" --out "$work/ref" --save-final "$work/ref.bin" \
  >"$work/ref.log" 2>&1 || { cat "$work/ref.log"; fail "the reference run failed"; }
[ -s "$work/ref.bin" ] || fail "no final weights from the reference run"
# The report against the trace: each bucket's event names the algorithm the report lists
# for it (Work::algorithm), and the exposed time's split (waiting for the slowest rank's
# backward + transfer) matches the one perf/trainer/overlap_trace.py recomputes from the
# trace's backward and wait spans (it drops waits under 20 us: tolerance per bucket).
python3 "$(dirname "$0")/check_report.py" "$work/ref" \
  "$(dirname "$0")/../../perf/trainer/overlap_trace.py" || fail "report and trace disagree"
# The headline figures (FLOP per sample, MFU, effective training time) against their
# definitions, for this MLP (digits: 64 inputs, 10 classes; --hidden 48 --layers 2).
python3 "$(dirname "$0")/check_figures.py" "$work/ref" 64 48 2 10 0.004 ||
  fail "the reference's figures"
# Several bucket all-reduces in flight at once: the same weights. Also the library's
# polling as the user sets it (CHORUS_SPIN_US wins over chorus-train's --spin-us 0), and
# the ranks taking turns at every GEMM (--gemm-yield on; auto, the reference's, is on only
# where the ranks outnumber the cores), and no warm-up all-reduces before the first step
# (the reference warms up: the warm-up must leave the training state as it was).
CHORUS_SPIN_US=200 "$run" -n 2 --timeout 120 "$train" "${common[@]}" --max-in-flight 3 --gemm-yield on \
  --no-comm-warmup --out "$work/inflight" --save-final "$work/inflight.bin" >"$work/inflight.log" 2>&1 ||
  { cat "$work/inflight.log"; fail "--max-in-flight 3 failed"; }
cmp "$work/ref.bin" "$work/inflight.bin" || fail "--max-in-flight 3 (--no-comm-warmup, --gemm-yield on): weights differ from the reference"
grep -q '"library_spin_us": "200"' "$work/inflight/report.json" || fail "CHORUS_SPIN_US=200 from the environment not used"
grep -q '"gemm_yield": true' "$work/inflight/report.json" || fail "--gemm-yield on not used"
grep -q '"comm_warmup_seconds": -1,' "$work/inflight/report.json" || fail "--no-comm-warmup not used"
grep -q '"comm_warmup_seconds": [0-9]' "$work/ref/report.json" || fail "the reference did not warm up"
auto=$([ 2 -gt "$(nproc)" ] && echo true || echo false)
grep -q "\"gemm_yield\": $auto" "$work/ref/report.json" || fail "--gemm-yield auto: not $auto with 2 ranks on $(nproc) cores"

# 2: two failures, two restarts, blocking saves (so the resume points are known) and then
# asynchronous ones (resume from whichever checkpoint had been completed).
for mode in blocking async; do
  flag=$([ $mode = blocking ] && echo --ckpt-blocking)
  "$run" -n 2 --timeout 120 --max-restarts 3 "$train" "${common[@]}" --ckpt-every 4 $flag \
    --fail-at-step 7,15 --fail-rank 1,0 --out "$work/$mode" --save-final "$work/$mode.bin" \
    >"$work/$mode.log" 2>&1
  status=$?
  cat "$work/$mode.log"
  [ $status = 0 ] || fail "$mode: the run with restarts exited with $status"
  restarts=$(grep -c "chorus-run: restarting the job" "$work/$mode.log")
  [ "$restarts" = 2 ] || fail "$mode: expected 2 restarts, saw $restarts"
  # The survivor got Chorus's error naming the killed rank.
  grep -q "chorus-train: rank 0: step 7: .*rank 1 \(died\|(pid [0-9]*) is gone\)" "$work/$mode.log" || fail "$mode: rank 0 did not name dead rank 1"
  grep -q "chorus-train: rank 1: step 15: .*rank 0 \(died\|(pid [0-9]*) is gone\)" "$work/$mode.log" || fail "$mode: rank 1 did not name dead rank 0"
  grep -q '"restart": 2' "$work/$mode/report.json" || fail "$mode: the report does not count the second failure"
  python3 "$(dirname "$0")/check_figures.py" "$work/$mode" 64 48 2 10 || fail "$mode: the figures"
  cmp "$work/ref.bin" "$work/$mode.bin" || fail "$mode: weights after two restarts differ from the reference"
done
grep -q "restart 1 resumes from .*step-00000004 (step 4)" "$work/blocking.log" || fail "restart 1 did not resume from step 4"
grep -q "restart 2 resumes from .*step-00000012 (step 12)" "$work/blocking.log" || fail "restart 2 did not resume from step 12"
[ "$(grep -o '"lost_steps": 3,' "$work/blocking/report.json" | wc -l)" = 2 ] || fail "lost work not 3 steps per failure"

# 3: torn and corrupt checkpoints are skipped. Blocking saves, so that all of 4, 8 and 12
# are complete when rank 1 dies at step 13.
"$run" -n 2 --timeout 120 "$train" "${common[@]}" --ckpt-every 4 --ckpt-blocking \
  --fail-at-step 13 --fail-rank 1 --out "$work/c" >"$work/c1.log" 2>&1 &&
  fail "the job with a failure and no restarts succeeded"
ck="$work/c/ckpt"
for s in 4 8 12; do
  [ -f "$ck/$(printf 'step-%08d' $s)/manifest.txt" ] || { cat "$work/c1.log"; ls -R "$ck"; fail "checkpoint $s missing"; }
done
shard="$ck/step-00000012/shard-1-of-2.bin"
size=$(stat -c %s "$shard")
printf '\x5a' | dd of="$shard" bs=1 seek=$((size - 3)) conv=notrunc status=none  # one byte
manifest="$ck/step-00000008/manifest.txt"
head -c $(($(stat -c %s "$manifest") / 2)) "$manifest" >"$manifest.cut" && mv "$manifest.cut" "$manifest"
"$run" -n 2 --timeout 120 "$train" "${common[@]}" --ckpt-every 4 --out "$work/c" \
  --save-final "$work/c.bin" >"$work/c2.log" 2>&1
status=$?
cat "$work/c2.log"
[ $status = 0 ] || fail "the resumed run exited with $status"
grep -q "step-00000012 rejected: .*checksum mismatch" "$work/c2.log" || fail "corrupt shard not reported"
grep -q "step-00000008 rejected: .*checksum" "$work/c2.log" || fail "torn manifest not reported"
grep -q "resumes from .*step-00000004 (step 4)" "$work/c2.log" || fail "did not resume from step 4"
cmp "$work/ref.bin" "$work/c.bin" || fail "weights after resuming past bad checkpoints differ"
echo "PASS: bit-identical weights after 2 restarts and after skipping a corrupt and a torn checkpoint"
