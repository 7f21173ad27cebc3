#!/bin/sh
# Many ranks on one node, shm and tcp: creation time, checked collectives, shared memory,
# mappings and tcp connections (perf/scale_ranks.cpp). Usage:
#   perf/scale_ranks.sh BUILD_DIR [RANKS (64)] [REPEATS (3)]
# Extra environment (CHORUS_ALGO=...) passes through to the ranks.
set -eu
build=${1:?build directory}
n=${2:-64}
repeats=${3:-3}
run=$build/tools/chorus-run
tool=$build/perf/scale_ranks
[ -x "$run" ] || run=$(find "$build" -name chorus-run -type f | head -1)
for i in $(seq "$repeats"); do
  for transport in shm tcp; do
    CHORUS_TRANSPORT=$transport CHORUS_SOCKET_IFNAME=${CHORUS_SOCKET_IFNAME:-lo} \
      CHORUS_TIMEOUT=${CHORUS_TIMEOUT:-120s} "$run" -n "$n" "$tool" | grep -E "^ranks|WRONG|ERROR"
  done
done
