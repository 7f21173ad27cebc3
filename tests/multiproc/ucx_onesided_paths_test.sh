#!/bin/sh
# ucx_onesided_paths_test.sh CHORUS_RUN COLLECTIVES_TEST: UCX's one-sided transfers
# (ucx_peer_memory.hpp) striped over two endpoints per peer, in two ways: two endpoints to
# the peer's one worker (CHORUS_UCX_PATHS=2, np 2), and one endpoint on each of two workers,
# each a rail with its own mapping and remote key (CHORUS_UCX_NET_DEVICES=lo,lo, np 3).
# Passes only if, in each way,
#  - every rank of the run of peer_push all-reduce and peer_ring all-gather on registered
#    buffers (--quick: every type and op, exact inputs, results checked by each rank; its
#    large cases cut into pieces) exited 0, and
#  - each channel's per-endpoint counters (logged at INFO as it closes: "ucx rank R -> P
#    path K (...): ... read N B, written M B") show both endpoints carrying at least a
#    hundredth of the bytes it read and wrote one-sided (ucx_path_shares.awk: not a
#    balance check, the shares follow measured rates).
# With more arguments, NP VAR=VALUE...: one such run with those settings instead (the
# Soft-RoCE guest: two rails, each UCX's rc_verbs on its own rxe device); COLL_ARGS: more
# arguments for the collectives test (a sample: --every N).
run=$1
coll=$2
shift 2
shares=$(dirname "$0")/ucx_path_shares.awk
out=$(mktemp)
trap 'rm -f "$out"' EXIT
algos=allreduce:peer_push,allgather:peer_ring

# check NP VAR=VALUE...: one run with those settings, checked as above.
check() {
np=$1
shift
echo "ucx_onesided_paths_test.sh: np $np, $*"
env "$@" CHORUS_DEBUG=INFO "$run" -n "$np" --timeout 100 "$coll" --transport ucx --quick \
  --buffers registered --algo $algos --expect-algo $algos --only allReduce,allGather \
  ${COLL_ARGS:-} >"$out" 2>&1
rc=$?
grep -v "CHORUS INFO" "$out" | tail -n 20
grep "CHORUS INFO ucx rank\|CHORUS INFO ucx: one-sided" "$out" | sort -u
if [ "$rc" -ne 0 ]; then
  echo "ucx_onesided_paths_test.sh: FAIL: chorus-run exited $rc"
  exit 1
fi
awk -v fields=read,written -v what=one-sided -v paths=2 -v channels=$((np * (np - 1))) \
  -v moved=1 -f "$shares" "$out" || { echo "ucx_onesided_paths_test.sh: FAIL (np $np, $*)"; exit 1; }
echo "ucx_onesided_paths_test.sh: both endpoints carried each channel's one-sided bytes (np $np, $*)"
}

if [ $# -gt 0 ]; then
  check "$@"
  exit 0
fi
check 2 CHORUS_UCX_PATHS=2
check 3 CHORUS_UCX_PATHS=1 CHORUS_UCX_NET_DEVICES=lo,lo
