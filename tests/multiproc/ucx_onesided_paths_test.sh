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
#    hundredth of the bytes it read and wrote one-sided. Not a balance check: the path
#    scheduler follows measured rates, so the shares are a matter of timing (8.7% was seen
#    on CI's 2 cores with 3 ranks); an endpoint left out carries nothing. How the shares
#    follow the rates is tested with a fake clock (tests/unit/striping_test.cpp).
# With more arguments, NP VAR=VALUE...: one such run with those settings instead (the
# Soft-RoCE guest: two rails, each UCX's rc_verbs on its own rxe device); COLL_ARGS: more
# arguments for the collectives test (a sample: --every N).
run=$1
coll=$2
shift 2
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
grep "CHORUS INFO ucx rank" "$out" | awk -v np="$np" '
  {
    for (i = 1; i <= NF; ++i) {
      if ($i == "rank") r = $(i + 1)
      if ($i == "->") p = $(i + 1)
      if ($i == "path") k = $(i + 1)
      if ($i == "read") rd = $(i + 1)
      if ($i == "written") wr = $(i + 1)
    }
    moved[r " " p " " k] = rd + wr; total[r " " p] += rd + wr
  }
  END {
    bad = 0; channels = 0
    for (c in total) {
      ++channels; split(c, rp, " ")
      if (total[c] == 0) { print "FAIL: rank " rp[1] " -> " rp[2] " moved nothing one-sided"; bad = 1 }
      for (k = 0; k < 2; ++k) {
        key = c " " k
        if (!(key in moved)) { print "FAIL: no counters for rank " rp[1] " -> " rp[2] " endpoint " k; bad = 1; continue }
        if (moved[key] * 100 < total[c]) { print "FAIL: rank " rp[1] " -> " rp[2] " moved " moved[key] " of " total[c] " B one-sided on endpoint " k; bad = 1 }
      }
      if (((c " 2") in moved)) { print "FAIL: a third endpoint on rank " rp[1] " -> " rp[2]; bad = 1 }
    }
    if (channels != np * (np - 1)) { print "FAIL: " channels " channels reported, expected " np * (np - 1); bad = 1 }
    exit bad
  }' || { echo "ucx_onesided_paths_test.sh: FAIL (np $np, $*)"; exit 1; }
echo "ucx_onesided_paths_test.sh: both endpoints carried each channel's one-sided bytes (np $np, $*)"
}

if [ $# -gt 0 ]; then
  check "$@"
  exit 0
fi
check 2 CHORUS_UCX_PATHS=2
check 3 CHORUS_UCX_PATHS=1 CHORUS_UCX_NET_DEVICES=lo,lo
