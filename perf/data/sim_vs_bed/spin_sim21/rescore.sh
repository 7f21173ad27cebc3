#!/usr/bin/env bash
# The re-score of this session, now perf/sim_rescore.sh:
#   CORE_POOL=1|2 [POOL_WAITERS_SPIN=1] [POOL_BOUND_CORES=1] [KEEP=DIR] rescore.sh CHORUS_SIM
exec "$(dirname "$0")/../../../sim_rescore.sh" "$@"
