#!/usr/bin/env bash
# initFromEnv's rendezvous honours CHORUS_TIMEOUT: rank 1 of an mpirun-style job whose
# rank 0 never starts must fail (exit 3, chorus_fault_trial's ERROR line naming rank 0)
# within CHORUS_TIMEOUT plus slack, not after the 300 s default.
#   rendezvous_timeout.sh TRIAL_BINARY
set -uo pipefail
trial=$1 limit=3 slack=15
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
env -u CHORUS_ADDR -u CHORUS_PORT -u MASTER_ADDR -u MASTER_PORT -u CHORUS_RANK -u RANK \
  OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 PMIX_NAMESPACE="chorus-rdv-timeout-$$-$start" \
  CHORUS_TIMEOUT=$limit timeout 120 "$trial" --fault kill --victim 9 >"$out" 2>&1
rc=$? elapsed=$(($(date +%s) - start))
cat "$out"
status=0
[ $rc -eq 3 ] || { echo "FAIL: exit status $rc, expected 3 (an ERROR line)"; status=1; }
grep -q "^rank 1: ERROR .*rank 0" "$out" || { echo "FAIL: no ERROR line naming rank 0"; status=1; }
[ $elapsed -le $((limit + slack)) ] || { echo "FAIL: took ${elapsed}s with CHORUS_TIMEOUT=$limit"; status=1; }
[ $status -eq 0 ] && echo "PASS: the rendezvous gave up after ${elapsed}s (CHORUS_TIMEOUT=$limit)"
exit $status
