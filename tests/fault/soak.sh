#!/usr/bin/env bash
# Soak of the fault suite: N random trials (default 1000) drawn from SEED (default: the
# clock), over every transport built. Prints each trial (its line reruns it alone with
# chorus-run) and the totals; exits non-zero when any trial failed.
#   tests/fault/soak.sh N [SEED]          (CHORUS_BUILD: the build folder, default ./build;
#                                         FAULT_DEADLINE: CHORUS_TIMEOUT in s, default 2)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${CHORUS_BUILD:-$here/../../build}
trials=${1:-1000} seed=${2:-$(date +%s)}
run=$build/tools/chorus-run trial=$build/tests/fault/chorus_fault_trial
for f in "$run" "$trial"; do
  [ -x "$f" ] || { echo "soak: $f not built (cmake --build build --target chorus-run chorus_fault_trial)"; exit 2; }
done
transports="shm tcp"
[ -d "$build/CMakeFiles/chorus.dir/transports/ucx" ] && transports="shm tcp ucx"  # UCX built
echo "soak: $trials trials, seed $seed, transports: $transports"
exec "$here/fault_suite.sh" "$run" "$trial" --random "$trials" "$seed" "$transports"
