#!/usr/bin/env bash
# Fault-injection suite: randomized trials of chorus_fault_trial under chorus-run. Each
# trial draws a transport (shm, tcp, and ucx when built), a rank count (3-6), a fault
# (kill, stop, close, truncate; truncate and close need sockets between ranks: tcp/ucx),
# a victim and the call it strikes at. Passes when, over all trials:
#   no hang (every trial ends before chorus-run's own timeout),
#   no wrong result reported as success,
#   kill/stop: every survivor fails within 2 x CHORUS_TIMEOUT (+ slack), naming the victim.
#   fault_suite.sh CHORUS_RUN TRIAL_BINARY [TRIALS] [SEED] [TRANSPORTS]
set -uo pipefail
run=$1 trial=$2 trials=${3:-100} seed=${4:-$(date +%s)} transports=${5:-"shm tcp"}
deadline=2  # CHORUS_TIMEOUT for the trials, seconds
RANDOM=$seed
echo "fault suite: $trials trials, seed $seed (rerun: $0 $run $trial $trials $seed \"$transports\")"
read -r -a tlist <<<"$transports"
declare -A injected
hangs=0 wrong=0 unnamed=0 late=0 failed_trials=0
times=()
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((t = 0; t < trials; t++)); do
  transport=${tlist[$((RANDOM % ${#tlist[@]}))]}
  n=$((3 + RANDOM % 4))
  if [ "$transport" = shm ]; then faults=(kill stop close); else faults=(kill stop close truncate); fi
  fault=${faults[$((RANDOM % ${#faults[@]}))]}
  victim=$((RANDOM % n)) at=$((RANDOM % 4)) tseed=$RANDOM
  injected[$fault]=$((${injected[$fault]:-0} + 1))
  start=$(date +%s.%N)
  CHORUS_TRANSPORT=$transport CHORUS_TIMEOUT=$deadline CHORUS_RUN_GRACE=1 \
    "$run" -n "$n" --timeout 60 "$trial" --seed "$tseed" --fault "$fault" --victim "$victim" \
    --at "$at" --calls 6 >"$out" 2>&1
  status=$?
  elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')
  what="trial $t: $transport n=$n $fault victim=$victim at=$at seed=$tseed"
  bad=""
  if [ $status -eq 124 ] || grep -q "timeout of 60s expired" "$out"; then
    hangs=$((hangs + 1)); bad="HANG"
  fi
  if grep -q "WRONG" "$out"; then wrong=$((wrong + 1)); bad="$bad WRONG"; fi
  if [ "$fault" = kill ] || [ "$fault" = stop ]; then
    for ((r = 0; r < n; r++)); do
      [ $r -eq "$victim" ] && continue
      line=$(grep -a "^rank $r: " "$out" | head -1)
      case "$line" in
        *ERROR*)
          ms=$(echo "$line" | sed -n 's/.*ERROR after \([0-9]*\) ms.*/\1/p')
          times+=("${ms:-0}")
          if ! echo "$line" | grep -q "rank $victim[^0-9]"; then unnamed=$((unnamed + 1)); bad="$bad UNNAMED(rank $r)"; fi
          if [ "${ms:-0}" -gt $((2 * deadline * 1000 + 1000)) ]; then late=$((late + 1)); bad="$bad LATE(rank $r ${ms}ms)"; fi ;;
        *) bad="$bad NO-ERROR(rank $r: ${line:-nothing})" ;;
      esac
    done
  fi
  if [ -n "$bad" ]; then
    failed_trials=$((failed_trials + 1))
    echo "FAIL $what:$bad"; sed 's/^/    /' "$out" | grep -v "CHORUS WARN" | head -20
  else
    printf '%s: ok (%.1f s)\n' "$what" "$elapsed"
  fi
done
sorted=$(printf '%s\n' "${times[@]:-0}" | sort -n)
count=$(echo "$sorted" | wc -l)
median=$(echo "$sorted" | sed -n "$(((count + 1) / 2))p")
max=$(echo "$sorted" | tail -1)
echo "faults injected: kill ${injected[kill]:-0}, stop ${injected[stop]:-0}, close ${injected[close]:-0}, truncate ${injected[truncate]:-0}"
echo "hangs $hangs, wrong results $wrong, errors not naming the victim $unnamed, late $late"
echo "time from fault to error (kill/stop survivors): median ${median} ms, max ${max} ms over $count reports"
if [ $failed_trials -eq 0 ]; then echo "fault suite passed: $trials trials"; exit 0; fi
echo "fault suite FAILED: $failed_trials of $trials trials"; exit 1
