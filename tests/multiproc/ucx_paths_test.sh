#!/bin/sh
# ucx_paths_test.sh CHORUS_RUN COLLECTIVES_TEST: the UCX transport striped over two
# endpoints per peer, in two ways: two endpoints to the peer's one worker
# (CHORUS_UCX_PATHS=2), and one endpoint on each of two workers, each a rail with its own
# receives (CHORUS_UCX_NET_DEVICES=lo,lo: both on loopback here, but the same code as one
# worker per NIC). 4 KiB pieces and a window of 4, so every collective is cut into many
# pieces and the credits turn over often. Passes only if, in each way,
#  - every rank of the np=2 run of all-reduce, all-gather and send/recv (--quick: every
#    type and op, exact inputs, results checked by each rank) exited 0, and
#  - each channel's per-endpoint counters (logged at INFO as it closes: "ucx rank R -> P
#    path K (epK): sent N B") show both endpoints carrying at least a hundredth of the
#    bytes it sent (the shares follow measured rates, a matter of timing; see
#    ucx_path_shares.awk, which checks them), and what each rank received on an endpoint
#    is what its peer sent on it.
run=$1
coll=$2
shares=$(dirname "$0")/ucx_path_shares.awk
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# check VAR=VALUE...: one run with those settings, checked as above.
check() {
echo "ucx_paths_test.sh: $*"
env "$@" CHORUS_UCX_BLOCK=4096 CHORUS_UCX_WINDOW=4 CHORUS_DEBUG=INFO \
  "$run" -n 2 --timeout 100 "$coll" --transport ucx --quick \
  --only allReduce,allGather,sendRecv >"$out" 2>&1
rc=$?
grep -v "CHORUS INFO" "$out" | tail -n 20
grep "CHORUS INFO ucx rank" "$out" | sort -u
if [ "$rc" -ne 0 ]; then
  echo "ucx_paths_test.sh: FAIL: chorus-run exited $rc"
  exit 1
fi
awk -v fields=sent -v what=sent -v paths=2 -v channels=2 -v received=1 -f "$shares" "$out" ||
  { echo "ucx_paths_test.sh: FAIL ($*)"; exit 1; }
echo "ucx_paths_test.sh: both endpoints carried each channel's bytes ($*)"
}

check CHORUS_UCX_PATHS=2
check CHORUS_UCX_PATHS=1 CHORUS_UCX_NET_DEVICES=lo,lo
