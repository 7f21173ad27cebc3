#!/bin/sh
# A one-sided soak over verbs (not in CI), run inside the Soft-RoCE guest:
#   WORK=/tmp/chorus-softroce-$UID bash tests/rdma/softroce.sh tests/rdma/soak_guest.sh \
#     BUILD=$PWD/build SRC=$PWD TRIALS=30 SEED=1 ALGO=peer_push MAX_RANKS=4
# runs tests/multiproc/one_sided_soak.sh there with CHORUS_TRANSPORT=ib over rxe0 (random
# rank counts 2..MAX_RANKS, types, every op, -R 1 and -R 2, odd sizes); exits as it does.
# SOAK=collective runs tests/multiproc/collective_soak.sh instead (every collective, three
# trials in four over ib, the rest over shm; ALGO is not used).
. /mnt/env
ip link set lo up
ip link show dummy0 >/dev/null 2>&1 || ip link add dummy0 type dummy
ip addr add 10.77.0.1/24 dev dummy0
ip link set dummy0 up
rdma link add rxe0 type rxe netdev dummy0 || { echo "FAIL: could not create rxe0"; exit 1; }
export CHORUS_TRANSPORT=ib CHORUS_IB_HCA=rxe0 CHORUS_BUILD="$BUILD" MAX_RANKS="${MAX_RANKS:-4}"
# The trials' transport, as chorus-perf's header names it: ib, or the soak proves nothing.
header=$("$BUILD/tools/chorus-run" -n 2 "$BUILD/perf/chorus-perf" -t allreduce -b 64K -e 64K \
  -n 1 -w 0 2>&1)
echo "$header" | grep -m1 "transport ib " ||
  { echo "$header"; echo "FAIL: chorus-perf does not run over ib here"; exit 1; }
if [ "${SOAK:-one_sided}" = collective ]; then  # every collective, over ib (and shm)
  # (a megabyte broadcast from every root in turn at np 4 took 563 s here, checked: TCG)
  TRANSPORTS="ib ib ib shm" TRIAL_TIMEOUT=${TRIAL_TIMEOUT:-900} \
    bash "$SRC/tests/multiproc/collective_soak.sh" "${TRIALS:-30}" "${SEED:-1}"
  exit
fi
bash "$SRC/tests/multiproc/one_sided_soak.sh" "${TRIALS:-30}" "${SEED:-1}" "${ALGO:-peer_push}"
