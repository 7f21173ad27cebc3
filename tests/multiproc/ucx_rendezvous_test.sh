#!/bin/sh
# ucx_rendezvous_test.sh CHORUS_RUN COLLECTIVES_TEST NP ARGS...: the UCX transport's
# rendezvous (ucx_channel.hpp: messages of at least CHORUS_UCX_RNDV_BYTES between
# registered buffers go as tagged chunks straight into the destination, not through the
# staging slots), forced from 1 KiB on. Passes only if
#  - every rank of the collectives run (ARGS: e.g. --quick --buffers registered: every type
#    and op, exact inputs, in and out of place, results checked by each rank) exited 0, and
#  - every channel's counters (logged at INFO as it closes: "ucx rank R -> P path 0 (ep0):
#    ... direct N B") show N > 0: each pair of ranks sent some of its bytes zero-copy, and
#  - where a channel has several endpoints (CHORUS_UCX_PATHS, CHORUS_UCX_NET_DEVICES in the
#    environment), each carried at least a hundredth of the channel's zero-copy bytes: the
#    chunks are striped (ucx_path_shares.awk: not a balance check, the shares follow
#    measured rates).
run=$1
coll=$2
np=$3
shift 3
shares=$(dirname "$0")/ucx_path_shares.awk
out=$(mktemp)
trap 'rm -f "$out"' EXIT
CHORUS_UCX_RNDV_BYTES=1K CHORUS_DEBUG=INFO "$run" -n "$np" --timeout 250 "$coll" \
  --transport ucx "$@" >"$out" 2>&1
rc=$?
grep -v "CHORUS INFO" "$out" | tail -n 20
if [ "$rc" -ne 0 ]; then
  echo "ucx_rendezvous_test.sh: FAIL: chorus-run exited $rc"
  exit 1
fi
want=$((np * (np - 1)))
awk -v fields=direct -v what=zero-copy -v channels=$want -v moved=1 -f "$shares" "$out" || {
  grep "CHORUS INFO ucx rank" "$out"
  echo "ucx_rendezvous_test.sh: FAIL: not every channel sent zero-copy over all its endpoints"
  exit 1
}
echo "ucx_rendezvous_test.sh: PASS: $want channels, each with bytes sent zero-copy"
