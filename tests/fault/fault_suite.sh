#!/usr/bin/env bash
# Fault-injection suite: trials of chorus_fault_trial under chorus-run, each one transport,
# rank count, fault, victim and call (fault_trial.cpp says what each fault does).
#   fault_suite.sh CHORUS_RUN TRIAL_BINARY --list FILE [TRANSPORTS]
#       the trials listed in FILE, one per line: transport ranks fault victim at seed
#       (CI: fixed, deterministic); trials over a transport not in TRANSPORTS are skipped
#   fault_suite.sh CHORUS_RUN TRIAL_BINARY --random N [SEED] [TRANSPORTS]
#       N trials drawn from SEED (soak.sh); each trial's line is its own rerun
# A trial passes only when
#   it ends before chorus-run's own timeout (no hang),
#   the victim printed its FAULT line (the fault struck: a binary that crashes at start fails),
#   every other rank printed exactly one result: "OK verified" (its results matched the
#   reference) or an ERROR naming the victim, within 2 x CHORUS_TIMEOUT + 1 s of the start
#   of the faulted call (truncate: any time before the hang limit),
#   no rank printed WRONG (a wrong result reported as success),
#   and a victim that lives on (close, truncate, store) printed a result too.
# A rank whose communicator could not be made (ERROR during set-up: the set-up deadline is
# CHORUS_TIMEOUT too) fails the trial as SETUP, counted apart from the errors above.
set -uo pipefail
run=$1 trial=$2 mode=$3
# CHORUS_TIMEOUT for the trials, seconds; FAULT_DEADLINE raises it for soaks on a loaded
# machine, where set-up alone can take longer than 2 s.
deadline=${FAULT_DEADLINE:-2}
declare -A injected
hangs=0 wrong=0 unnamed=0 late=0 missing=0 setup=0 failed_trials=0 ran=0
times=()
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# run_trial TRANSPORT N FAULT VICTIM AT SEED
run_trial() {
  local transport=$1 n=$2 fault=$3 victim=$4 at=$5 tseed=$6
  local what="$transport n=$n $fault victim=$victim at=$at seed=$tseed"
  injected[$fault]=$((${injected[$fault]:-0} + 1))
  ran=$((ran + 1))
  local start status elapsed bad="" r line ms
  start=$(date +%s.%N)
  # The grace outlasts a survivor's deadline plus its diagnosis, so chorus-run kills only
  # the victim, never a survivor still counting down to its error.
  CHORUS_TRANSPORT=$transport CHORUS_TIMEOUT=$deadline CHORUS_RUN_GRACE=$((2 * deadline + 1)) \
    timeout 90 "$run" -n "$n" --timeout 60 "$trial" --seed "$tseed" --fault "$fault" \
    --victim "$victim" --at "$at" --calls 6 >"$out" 2>&1 &
  local pid=$!
  # A stopped victim never exits: chorus-run would keep the trial open for its whole grace
  # period. Once every survivor has printed its result, the suite kills the stopped victim
  # itself (only a process in state T running this trial's seed; survivors exit on their
  # own, so a survivor that hangs on its way out still fails the trial as a HANG).
  if [ "$fault" = stop ]; then
    while kill -0 "$pid" 2>/dev/null; do
      if [ "$(grep -ac "^rank [0-9]*: \(OK verified\|ERROR\)" "$out")" -ge $((n - 1)) ]; then
        ps -eo pid=,stat=,args= | awk -v t="$trial" -v s="--seed $tseed --fault stop " \
          '$2 ~ /^T/ && index($0, t) && index($0 " ", s) {print $1}' | xargs -r kill -KILL
        break
      fi
      sleep 0.1
    done
  fi
  wait "$pid"
  status=$?
  elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')
  if [ $status -eq 124 ] || grep -q "timeout of 60s expired" "$out"; then
    hangs=$((hangs + 1)) bad="HANG"
  fi
  if grep -aq "WRONG" "$out"; then wrong=$((wrong + 1)) bad="$bad WRONG"; fi
  if ! grep -aq "^rank $victim: FAULT $fault at call $at\$" "$out"; then
    missing=$((missing + 1)) bad="$bad FAULT-NOT-INJECTED"
  fi
  for ((r = 0; r < n; r++)); do
    local results
    results=$(grep -ac "^rank $r: \(OK verified\|ERROR\)" "$out")
    if [ "$r" -eq "$victim" ]; then
      case "$fault" in kill | stop | exit) continue ;; esac
      [ "$results" -eq 1 ] || { missing=$((missing + 1)) bad="$bad NO-RESULT(victim $r)"; }
      continue
    fi
    line=$(grep -a "^rank $r: \(OK verified\|ERROR\)" "$out" | head -1)
    if [ "$results" -ne 1 ]; then
      missing=$((missing + 1)) bad="$bad NO-RESULT(rank $r: $results lines)"
      continue
    fi
    case "$line" in
      *"ERROR during set-up"*)  # no fault had struck: a failure, but not one of naming
        setup=$((setup + 1)) bad="$bad SETUP(rank $r)"
        ;;
      *ERROR*)
        ms=$(echo "$line" | sed -n 's/.*ERROR after \([0-9]*\) ms.*/\1/p')
        times+=("${ms:-0}")
        if ! echo "$line" | grep -q "rank $victim[^0-9]"; then
          unnamed=$((unnamed + 1)) bad="$bad UNNAMED(rank $r)"
        fi
        # A truncated call is a large one: under load it runs for seconds before the fault.
        if [ "$fault" != truncate ] && [ "${ms:-0}" -gt $((2 * deadline * 1000 + 1000)) ]; then
          late=$((late + 1)) bad="$bad LATE(rank $r ${ms}ms)"
        fi
        ;;
    esac
  done
  if [ -n "$bad" ]; then
    failed_trials=$((failed_trials + 1))
    echo "FAIL $what:$bad"
    sed 's/^/    /' "$out" | grep -v "CHORUS WARN" | head -20
  else
    printf '%s: ok (%.1f s)\n' "$what" "$elapsed"
  fi
}

case "$mode" in
  --list)
    file=$4 transports=${5:-"shm tcp"}
    echo "fault suite: the trials in $file over: $transports"
    while read -r transport n fault victim at tseed; do
      case "$transport" in '' | '#'*) continue ;; esac
      [[ " $transports " == *" $transport "* ]] || continue
      run_trial "$transport" "$n" "$fault" "$victim" "$at" "$tseed"
    done <"$file"
    ;;
  --random)
    trials=$4 seed=${5:-$(date +%s)} transports=${6:-"shm tcp"}
    RANDOM=$seed
    echo "fault suite: $trials random trials, seed $seed over: $transports"
    echo "(rerun: $0 $run $trial --random $trials $seed \"$transports\")"
    read -r -a tlist <<<"$transports"
    for ((t = 0; t < trials; t++)); do
      transport=${tlist[$((RANDOM % ${#tlist[@]}))]}
      n=$((3 + RANDOM % 4))
      if [ "$transport" = shm ]; then
        faults=(kill stop exit close store)
      else
        faults=(kill stop exit close truncate store)
      fi
      fault=${faults[$((RANDOM % ${#faults[@]}))]}
      victim=$((RANDOM % n)) at=$((RANDOM % 4)) tseed=$RANDOM
      printf 'trial %d: ' "$t"
      run_trial "$transport" "$n" "$fault" "$victim" "$at" "$tseed"
    done
    ;;
  *)
    echo "usage: $0 CHORUS_RUN TRIAL_BINARY --list FILE [TRANSPORTS] | --random N [SEED] [TRANSPORTS]"
    exit 2
    ;;
esac

count=${#times[@]} median=- max=-
if [ "$count" -gt 0 ]; then
  sorted=$(printf '%s\n' "${times[@]}" | sort -n)
  median=$(echo "$sorted" | sed -n "$(((count + 1) / 2))p")
  max=$(echo "$sorted" | tail -1)
fi
summary=""
for f in "${!injected[@]}"; do summary="$summary $f ${injected[$f]},"; done
echo "faults injected:${summary%,}"
echo "hangs $hangs, wrong results reported as success $wrong, errors not naming the victim $unnamed, late $late, missing results or faults $missing, set-up failures $setup"
echo "time from the faulted call to the error (survivors): median ${median} ms, max ${max} ms over $count reports"
if [ $ran -eq 0 ]; then echo "fault suite FAILED: no trials ran"; exit 1; fi
if [ $failed_trials -eq 0 ]; then echo "fault suite passed: $ran trials"; exit 0; fi
echo "fault suite FAILED: $failed_trials of $ran trials"
exit 1
