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
#    chunks are striped. The path scheduler follows measured rates, so the shares are a
#    matter of timing (a quarter of an even share failed once on CI's 2 cores); an endpoint
#    left out carries nothing. How the shares follow the rates is tested with a fake clock
#    (tests/unit/striping_test.cpp, PathScheduler.*).
run=$1
coll=$2
np=$3
shift 3
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
# One line per channel end on path 0; np 1 has none.
lines=$(grep -c "CHORUS INFO ucx rank [0-9]* -> [0-9]* path 0 " "$out")
want=$((np * (np - 1)))
if [ "$lines" -ne "$want" ]; then
  echo "ucx_rendezvous_test.sh: FAIL: $lines channel reports, expected $want"
  exit 1
fi
zero=$(grep "CHORUS INFO ucx rank [0-9]* -> [0-9]* path 0 " "$out" |
  awk '{for (i = 1; i < NF; i++) if ($i == "direct") print $(i + 1)}' | grep -c '^0$')
if [ "$zero" -ne 0 ]; then
  grep "CHORUS INFO ucx rank" "$out"
  echo "ucx_rendezvous_test.sh: FAIL: $zero channels sent nothing zero-copy"
  exit 1
fi
grep "CHORUS INFO ucx rank [0-9]* -> [0-9]* path " "$out" | awk '
  {
    for (i = 1; i < NF; i++) {
      if ($i == "rank") r = $(i + 1)
      if ($i == "->") p = $(i + 1)
      if ($i == "path") k = $(i + 1)
      if ($i == "direct") d = $(i + 1)
    }
    direct[r " " p " " k] = d; total[r " " p] += d; paths[r " " p]++
  }
  END {
    bad = 0
    for (key in direct) {
      split(key, f, " "); c = f[1] " " f[2]
      if (paths[c] > 1 && direct[key] * 100 < total[c]) {
        print "FAIL: rank " f[1] " -> " f[2] " sent " direct[key] " of " total[c] \
          " B zero-copy on endpoint " f[3]
        bad = 1
      }
    }
    exit bad
  }' || { echo "ucx_rendezvous_test.sh: FAIL: the chunks were not striped"; exit 1; }
echo "ucx_rendezvous_test.sh: PASS: $want channels, each with bytes sent zero-copy"
