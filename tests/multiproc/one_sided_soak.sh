#!/usr/bin/env bash
# Soak of a one-sided all-reduce (not in CI): N random trials drawn from SEED, each a
# chorus-perf run with the algorithm forced, checked (-c 1) in and out of place: a random
# rank count (2-9), type, every op, registered (-R 1: CMA) or memAlloc (-R 2) buffers, and
# sizes from 1-5000 bytes up in odd steps (parts of uneven sizes, one or more rounds).
# Prints each failing trial's command (it reruns it alone) and the totals; exits non-zero
# when any trial failed (an error, a hang past 120 s, or a wrong element).
#   tests/multiproc/one_sided_soak.sh N [SEED] [ALGO]   (default: 100, the clock, peer_push;
#                                                        CHORUS_BUILD: default ./build)
# Env: MAX_RANKS (default 9: rank counts 2..MAX_RANKS). Over verbs, inside the Soft-RoCE
# guest: tests/rdma/soak_guest.sh runs it with CHORUS_TRANSPORT=ib.
set -u
trials=${1:-100}
seed=${2:-$(date +%s)}
algo=${3:-peer_push}
build=${CHORUS_BUILD:-build}
max_ranks=${MAX_RANKS:-9}
RANDOM=$((seed % 32768))
types=(int8 uint8 int32 uint32 int64 uint64 half float double bfloat16)
failures=0
for ((t = 0; t < trials; t++)); do
  np=$((RANDOM % (max_ranks - 1) + 2))
  type=${types[$((RANDOM % ${#types[@]}))]}
  buffers=$((RANDOM % 2 + 1))
  first=$((RANDOM % 5000 + 1))
  step=$((RANDOM % 900000 + 12345))
  cmd="$build/tools/chorus-run -n $np $build/perf/chorus-perf -t allreduce -A allreduce:$algo"
  cmd+=" -R $buffers -d $type -o all -b $first -e $((first + 3 * step)) -f 1 -i $step"
  cmd+=" -n 1 -w 0 -c 1 -T 0"
  out=$(timeout 120 $cmd 2>&1)
  rc=$?
  if [ $rc -ne 0 ] || ! grep -q "Out of bounds values : 0 OK" <<<"$out"; then
    failures=$((failures + 1))
    echo "FAIL (exit $rc): $cmd"
    tail -n 5 <<<"$out"
  fi
done
echo "one_sided_soak: $algo, seed $seed, $trials trials, $failures failed"
[ $failures -eq 0 ]
