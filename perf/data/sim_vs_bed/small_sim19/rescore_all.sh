#!/usr/bin/env bash
# The re-score of this session (no pool: the default model), now perf/sim_rescore.sh's:
#   rescore_all.sh CHORUS_SIM
exec env -u CORE_POOL "$(dirname "$0")/../../../sim_rescore.sh" "$@"
