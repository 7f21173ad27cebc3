#!/bin/bash
# chorus-train's checkpoint interval: Young-Daly from the first save's measured cost, and
# the saves made at that interval (check_young_daly.py recomputes both from the inputs the
# report lists). Jobs of 2 ranks:
#   1. an MTBF that gives an interval of 2 to 50 steps, where the schedule of saves is
#      checked (at 1 step, a save every step, a wrong schedule could pass): the interval
#      grows as sqrt(MTBF), so from 1 s each next try scales the MTBF by (8 / every)^2; 4
#      tries, each checked in full (step times here vary 10x between runs);
#   2. --mtbf 100000 s: sqrt(2 x pause x MTBF) is far above the background write, so the
#      square root is the interval (the max() cannot hide a wrong formula);
#   3. no --mtbf: rank 1 killed at step 10 of a job with no checkpoints, rank 0 at step 20
#      of the relaunch (which saves from the MTBF seen); the third launch (chorus-run
#      --max-restarts 2) takes the MTBF as the job's time per failure seen.
set -u
run=$1 train=$2
here=$(dirname "$0")
work=$(mktemp -d /tmp/chorus-young-daly.XXXXXX)
trap 'rm -rf "$work"' EXIT
steps=60
common=(--hidden 48 --layers 2 --batch 16 --steps $steps --eval-every 0 --bucket-mb 0.004
        --lr 0.01 --warmup 3 --quiet --timeout-s 60)
export CHORUS_RUN_GRACE=30
fail() { echo "FAIL: $*"; exit 1; }

# job NAME MTBF: one job of 2 ranks with --mtbf MTBF, checked; sets $every.
job() {
  "$run" -n 2 --timeout 120 "$train" "${common[@]}" --mtbf "$2" --out "$work/$1" \
    >"$work/$1.log" 2>&1 || { cat "$work/$1.log"; fail "--mtbf $2: the job failed"; }
  python3 "$here/check_young_daly.py" "$work/$1" $steps --mtbf "$2" ||
    { grep "checkpoint" "$work/$1.log"; fail "--mtbf $2"; }
  every=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["checkpoints"]["every_steps"])' \
    "$work/$1/report.json")
}

mtbf=1 spaced=0
for try in 1 2 3 4; do
  job "try$try" $mtbf
  if [ "$every" -ge 2 ] && [ "$every" -le 50 ]; then spaced=1; break; fi
  mtbf=$(python3 -c "print(f'{$mtbf * min(1e4, max(1e-4, (8 / $every) ** 2)):.6g}')")
done
[ $spaced = 1 ] || fail "no MTBF gave an interval of 2 to 50 steps: the schedule of saves went unchecked"
job big 100000

"$run" -n 2 --timeout 120 --max-restarts 2 "$train" "${common[@]}" --fail-at-step 10,20 \
  --fail-rank 1,0 --out "$work/seen" >"$work/seen.log" 2>&1 ||
  { cat "$work/seen.log"; fail "the job with a failure did not finish"; }
python3 "$here/check_young_daly.py" "$work/seen" $steps --mtbf-from-failures ||
  { grep "checkpoint\|restart" "$work/seen.log"; fail "MTBF from the failures seen"; }
echo "PASS: Young-Daly intervals and the saves they give"
