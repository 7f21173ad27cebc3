#!/usr/bin/env bash
# The re-score of this session, now perf/sim_rescore.sh's (which added the spin and bound
# variants of spin_sim21; without them it is the same script):
#   [CORE_POOL=1|2] [KEEP=DIR] rescore.sh CHORUS_SIM
exec env -u POOL_WAITERS_SPIN -u POOL_BOUND_CORES "$(dirname "$0")/../../../sim_rescore.sh" "$@"
