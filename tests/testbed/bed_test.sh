#!/usr/bin/env bash
# CTest driver for the test bed (label `topology`):
#
#   bed_test.sh collectives K N RATE BUILD_DIR [suite args...]
#       K nodes x N ranks, 2 NICs per node at RATE (Ngbit): every rank must see K nodes
#       and N local ranks (chorus-topo --cluster, and the communicator's "N local ranks"),
#       the NICs must carry the bed's speed (topology file), and the collectives suite must
#       pass over tcp.
#   bed_test.sh ucx K N RATE BUILD_DIR [suite args...]
#       the collectives suite between the nodes over ucx with one UCX worker per NIC
#       (CHORUS_UCX_NET_DEVICES=auto): it must pass, and each NIC must carry at least a
#       quarter of the bytes the nodes send (the kernel's counters): both are rails.
#   bed_test.sh ucx_keepalive N BUILD_DIR
#       2 nodes x N ranks over ucx, one UCX worker per NIC, CHORUS_KEEPALIVE=8s: every end
#       of every UCX tcp connection, between the nodes and within one, the connecting end's
#       (UCX's) and the accepting end's (Chorus's, ucx_keepalive.hpp), must have keepalive
#       after 4 s idle, every 1 s, 4 probes (chorus_ucx_keepalive_test).
#   bed_test.sh bind K N BUILD_DIR
#       K nodes x N ranks: the nodes are namespaces on this one machine, so every rank must
#       count all K x N ranks on the machine (not its node's N) against the cores it may
#       run on, and where they outnumber them yield while waiting and be bound one core each
#       (spread over all the cores; not bound where the affinity was narrowed already).
#   bed_test.sh cutoff N BUILD_DIR [KEEPALIVE_S]
#       2 nodes x N ranks over tcp; in the middle of a run a rank of node 1 takes its node's
#       NICs down (the node is cut off; its processes live on). Within a few seconds of
#       CHORUS_KEEPALIVE every rank must fail: node 0's naming a node-1 rank that
#       cannot be reached, node 1's naming rank 0 (the store's host), none at CHORUS_TIMEOUT
#       and none with a wrong result. KEEPALIVE_S 0 (keepalive off): every rank fails at
#       CHORUS_TIMEOUT (10 s) instead, its timeout saying it waits for a rank across the cut
#       and that rank cannot be reached (the engine probes the awaited peers' hosts).
#   bed_test.sh cutoff N BUILD_DIR 0 tcp follower
#       the same cut with keepalive off over tcp, the all-reduces on a ring (0 -> 1 -> ... ->
#       2N-1 -> 0; CHORUS_ALGO), rank 1's CHORUS_TIMEOUT 9 s and the others' 10 s: rank 1
#       waits for rank 0 beside it, which waits for rank 2N-1 across the cut on a connection
#       that carries nothing to it (only the probes from rank 0's half deadline can find its
#       host silent). Rank 1's deadline comes first, so it must read that silence from rank
#       0's report, written again when the probes found it (Engine::noteSilence), and name
#       rank 2N-1 as cut off as seen from rank 0 (never as not waiting or nothing known).
#   bed_test.sh cutoff N BUILD_DIR 4 ucx
#       (no ctest) the same cut with keepalive 4 s over ucx: Chorus's store still names the
#       other side first at every rank, so this does not tell whether UCX's connections
#       end (both ends' keepalive: transports/ucx/ucx_keepalive.hpp).
#   bed_test.sh cutoff N BUILD_DIR 0 ucx
#       the same cut with keepalive off over ucx (CHORUS_NET=ucx, one UCX worker per NIC),
#       the all-reduces hierarchical (hier_rd): every rank's timeout names a rank across the
#       cut that cannot be reached (the ucx transport probes UCX's tcp connections to the
#       awaited peers' hosts).
#   bed_test.sh stop N BUILD_DIR ucx
#       2 nodes x N ranks over ucx (as cutoff ... ucx); rank N (node 1) stops (SIGSTOP) at
#       call 2: its host still answers, so every other rank's timeout must name it and none
#       may call any rank one that cannot be reached.
#   bed_test.sh torch_cutoff N BUILD_DIR [tcp|ucx]
#       the same cut (keepalive 4 s) under torch.distributed with torch's own TCPStore: each
#       rank's collective raises within 20 s, naming a rank across the cut as unreachable.
#       Over ucx (no ctest; it fails for now: a rank whose UCX connection ended calls the
#       rank across the cut not waiting, or one with data in flight waits for
#       CHORUS_TIMEOUT) only UCX's keepalive can tell.
#   bed_test.sh cleanup BUILD_DIR
#       the bed is removed after a failing rank, a timeout and an interrupt.
#
# Exit 77 (skipped) where network namespaces cannot be made.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bed=$here/netns_bed.sh
state=${CHORUS_BED_STATE:-/tmp/chorus-bed}
fail() {
  echo "bed_test: FAIL: $*" >&2
  exit 1
}
log=$(mktemp /tmp/chorus-bed-test.XXXXXX)
id=""
trap '[[ -n $id ]] && "$bed" down "$id"; rm -f "$log"' EXIT

# bring_up K RATE WHAT: a bed of K nodes x 2 NICs at RATE in $id (skip where none can be made).
bring_up() {
  id=$("$bed" up "$1" 2 "$2")
  local rc=$?
  ((rc == 77)) && exit 77
  ((rc == 0)) || fail "netns_bed.sh up $1 2 $2: status $rc"
  echo "bed $id: $1 nodes x 2 NICs at $2, $3"
}

collectives() {
  local k=$1 n=$2 rate=$3 build=$4
  shift 4
  bring_up "$k" "$rate" "$n ranks per node"
  local rc

  # The NIC speed comes from the bed's topology file.
  local gbit=${rate%gbit}
  ip netns exec "${id}n0" env CHORUS_TOPO_FILE="$state/$id/bed.topo" \
    "$build/tools/chorus-topo" >"$log" 2>&1
  cat "$log"
  grep -q "nic rail1: up, $gbit Gbit/s" "$log" || fail "chorus-topo does not show rail1 at $rate"

  # Every rank sees the node structure.
  "$bed" run -b "$id" -n "$n" -t 60 -- "$build/tools/chorus-topo" --cluster >"$log" 2>&1 ||
    { cat "$log"; fail "chorus-topo --cluster failed"; }
  cat "$log"
  local world=$((k * n))
  grep -q "cluster: $world ranks, $k nodes (uniform), ring:" "$log" || fail "rank 0's cluster line"
  local seen
  seen=$(grep -c "of $k nodes, local rank [0-9]* of $n, nic rail" "$log")
  ((seen == world)) || fail "$seen of $world ranks saw $k nodes of $n ranks"

  # Every collective correct over tcp; the communicator counts N local ranks.
  local t0=$SECONDS
  "$bed" run -b "$id" -n "$n" -t 200 -e CHORUS_DEBUG=INFO -- \
    "$build/tests/multiproc/chorus_collectives_test" --transport tcp "$@" >"$log" 2>&1
  rc=$?
  grep -E "FAIL|passed|ready:|rank 0 time|Error|error" "$log" | head -60
  ((rc == 0)) || fail "collectives suite: status $rc"
  grep -q "^\[0\] [0-9]* passed, 0 failed" "$log" || fail "no '0 failed' line from rank 0"
  seen=$(grep -c "ready: transport tcp, $n local ranks" "$log")
  ((seen == world)) || fail "$seen of $world ranks report $n local ranks over tcp"
  echo "bed_test: OK: $k nodes x $n ranks, suite $((SECONDS - t0)) s"
}

# Bytes the nodes of bed $id sent on rail $1 (the node end of each veth).
rail_sent() {
  local total=0 v i
  for ((i = 0; i < $2; ++i)); do
    v=$(ip netns exec "${id}n$i" cat "/sys/class/net/rail$1/statistics/tx_bytes") || return 1
    total=$((total + v))
  done
  echo "$total"
}

ucx_keepalive() {
  local n=$1 build=$2 world=$(($1 * 2))
  bring_up 2 1gbit "$n ranks per node over ucx, keepalive 8 s"
  "$bed" run -b "$id" -n "$n" -t 60 -e CHORUS_KEEPALIVE=8s -e CHORUS_UCX_NET_DEVICES=auto \
    -e CHORUS_DEBUG=INFO -- "$build/tests/multiproc/chorus_ucx_keepalive_test" \
    --idle 4 --interval 1 --probes 4 >"$log" 2>&1
  local rc=$?
  grep -E "rank [0-9]+: (OK|FAIL): [0-9]|FAIL" "$log" | cut -c1-300
  ((rc == 0)) || fail "the run's status is $rc, not 0"
  local used ok
  used=$(grep -c "ready: transport ucx" "$log")
  ((used == world)) || fail "$used of $world ranks used ucx"
  # Each rank: (world - 1) peers x 2 rails, one end each.
  ok=$(grep -c "rank [0-9]*: OK: socket" "$log")
  ((ok == world * (world - 1) * 2)) || fail "$ok connection ends checked, not $((world * (world - 1) * 2))"
  echo "bed_test: OK: every end of the $((world * (world - 1))) UCX connections has CHORUS_KEEPALIVE's keepalive"
}

ucx_rails() {
  local k=$1 n=$2 rate=$3 build=$4
  shift 4
  bring_up "$k" "$rate" "$n ranks per node, ucx"
  local rc
  local a0 a1 b0 b1
  a0=$(rail_sent 0 "$k") && a1=$(rail_sent 1 "$k") || fail "cannot read the NIC counters"
  local t0=$SECONDS
  "$bed" run -b "$id" -n "$n" -t 200 -e CHORUS_NET=ucx -e CHORUS_UCX_NET_DEVICES=auto \
    -e CHORUS_DEBUG=INFO -- "$build/tests/multiproc/chorus_collectives_test" --transport ucx \
    "$@" >"$log" 2>&1
  rc=$?
  grep -E "FAIL|passed|rank 0 time|Error|error" "$log" | grep -v "CHORUS INFO" | head -40
  ((rc == 0)) || fail "collectives suite over ucx: status $rc"
  grep -q "^\[0\] [0-9]* passed, 0 failed" "$log" || fail "no '0 failed' line from rank 0"
  grep -q "ready: transport ucx" "$log" || fail "the ranks did not use ucx"
  b0=$(rail_sent 0 "$k") && b1=$(rail_sent 1 "$k") || fail "cannot read the NIC counters"
  local r0=$((b0 - a0)) r1=$((b1 - a1))
  echo "bed_test: rail0 carried $((r0 >> 20)) MiB, rail1 $((r1 >> 20)) MiB"
  ((r0 + r1 > 32 << 20)) || fail "only $(((r0 + r1) >> 20)) MiB crossed the NICs"
  # Each NIC a hundredth: the rails' shares follow measured rates (timing, not a balance
  # check); a NIC left out carries nothing.
  ((100 * r0 >= r0 + r1 && 100 * r1 >= r0 + r1)) || fail "a NIC carried less than a hundredth"
  echo "bed_test: OK: $k nodes x $n ranks over ucx on both NICs, suite $((SECONDS - t0)) s"
}

bind_decision() {
  local k=$1 n=$2 build=$3 world=$(($1 * $2)) cores online
  cores=$(nproc)  # the cores this process may run on (its affinity), as the ranks count them
  online=$(getconf _NPROCESSORS_ONLN)
  "$bed" run -k "$k" -m 1 -r 1gbit -n "$n" -t 60 -e CHORUS_DEBUG=INFO -- \
    "$build/perf/chorus-perf" -t allreduce -b 8 -e 8 -n 5 -w 1 >"$log" 2>&1 ||
    { cat "$log"; fail "chorus-perf on the bed failed"; }
  grep "ready: transport" "$log"
  local seen
  seen=$(grep -c "ready: transport tcp, $n local ranks, .* $world ranks on this machine, $cores cores:" "$log")
  ((seen == world)) || fail "$seen of $world ranks counted $n local and $world machine ranks on $cores cores"
  if ((world > cores)); then
    seen=$(grep -c "yields while waiting" "$log")
    ((seen == world)) || fail "$seen of $world oversubscribed ranks yield while waiting"
    if ((cores >= 2 && cores == online)); then
      seen=$(grep -o "bound to core [0-9]*" "$log" | sort -u | wc -l)
      ((seen == cores)) || fail "the ranks are bound to $seen distinct cores, not all $cores"
      seen=$(grep -c "bound to core" "$log")
      ((seen == world)) || fail "$seen of $world ranks bound to a core"
    fi
  else
    seen=$(grep -c "not bound, spins while waiting" "$log")
    ((seen == world)) || fail "$seen of $world ranks with a core each are unbound and spin"
  fi
  echo "bed_test: OK: $k nodes x $n ranks, $cores cores: the machine's $world ranks decide"
}

# keepalive 4: the connections end within seconds, naming the unreachable ranks.
# keepalive 0 (the kernel's, hours): nothing ends before CHORUS_TIMEOUT (10 s); from half of
# it each rank probes the peers it waits for, so its timeout diagnosis names a rank on the
# other side as unreachable, and a cut-off store holds up no rank's error.
cutoff() {
  local n=$1 build=$2 keepalive=${3:-4} net=${4:-tcp} follower=${5:-} world=$(($1 * 2))
  local timeout=90s limit_ms=20000
  ((keepalive == 0)) && timeout=10s limit_ms=25000
  [[ -z $follower || ($follower == follower && $net == tcp && $keepalive == 0) ]] ||
    fail "'follower' goes with keepalive 0 over tcp"
  local env=() wrap=() seed=5
  # UCX's own keepalive (after 10 s idle by default) waits past the deadline here, so that
  # only the transport's probes can make a silent host's idle connections count.
  # hier_rd: each node-0 rank waits first for the rank across the cut, while its neighbour's
  # receive of the next phase is queued too (Engine::earliestWait).
  [[ $net == ucx ]] && env=(-e CHORUS_NET=ucx -e CHORUS_UCX_NET_DEVICES=auto -e CHORUS_DEBUG=INFO
    -e CHORUS_ALGO=allreduce:hier_rd)
  [[ $net == ucx ]] && ((keepalive == 0)) && env+=(-e UCX_TCP_KEEPIDLE=60s)
  if [[ -n $follower ]]; then
    # Rank 0's probes (from half its 16 s deadline) find rank 2N-1's host silent after 3 of
    # them, a second apart (7.1-7.2 s with a 10 s deadline: ~10 s here): rank 1's deadline
    # (14 s) comes well after that and 2 s before rank 0's. Seed 95: an
    # all-to-all (connecting every pair), two ring all-reduces, the cut at the second (seed
    # 5's all-to-all just before the cut left rank 0's data to rank 3 unacknowledged in 1
    # of 5 runs: resends, found before noteSilence could matter).
    env=(-e CHORUS_ALGO=allreduce:ring)
    seed=95 timeout=16s limit_ms=32000
    # shellcheck disable=SC2016  # expanded by each rank's shell
    wrap=(sh -c '[ "$CHORUS_RANK" = 1 ] && export CHORUS_TIMEOUT=14s; exec "$@"' follower)
  fi
  bring_up 2 1gbit "$n ranks per node over $net, node 1 cut off at call 2, keepalive ${keepalive}s"
  "$bed" run -b "$id" -n "$n" -t 120 -e CHORUS_KEEPALIVE=${keepalive}s "${env[@]}" \
    -e CHORUS_TIMEOUT=$timeout -- "${wrap[@]}" "$build/tests/fault/chorus_fault_trial" \
    --fault cutoff --victim "$n" --at 2 --calls 6 --seed "$seed" >"$log" 2>&1
  local rc=$?
  grep -E "^\[[0-9]+\] rank [0-9]+: (FAULT|ERROR|OK|WRONG)" "$log" | cut -c1-600
  ((rc == 3)) || fail "the run's status is $rc, not 3 (every rank fails with an error)"
  grep -q "FAULT cutoff at call 2" "$log" || fail "the cut was not made"
  if [[ $net == ucx ]]; then
    local used
    used=$(grep -c "ready: transport ucx" "$log")
    ((used == world)) || fail "$used of $world ranks used ucx"
  fi
  local r line node0="$(seq -s '|' 0 $((n - 1)))" node1="$(seq -s '|' "$n" $((world - 1)))"
  for ((r = 0; r < world; ++r)); do
    line=$(grep "^\[$r\] rank $r: ERROR after" "$log") || fail "rank $r reported no error"
    local other=$node1
    ((r < n)) || other=$node0
    ((keepalive > 0 && r >= n)) && other=0  # the store's host: its connection ends first
    # Within the limit, naming the call, a rank of the other side that cannot be reached
    # (once per observer), and none there as merely not waiting (cutoff_check.sh, shared
    # with the ib cut of tests/rdma/node_suite.sh).
    local why
    why=$("$here/cutoff_check.sh" "$r" "$other" "$limit_ms" "$line") || fail "$why"
    if [[ -n $follower ]]; then  # on the ring: it waits for the rank before it or after it
      local before=$(((r + world - 1) % world)) after=$(((r + 1) % world))
      grep -Eq "\(CHORUS_TIMEOUT\), waiting for (data from rank $before|rank $after to take data)\b" <<<"$line" ||
        fail "rank $r's timeout does not say it waits for its ring neighbour ($before or $after)"
      grep -Eq "rank ($other): nothing known" <<<"$line" &&
        fail "rank $r knows nothing of a rank across the cut, where its host cannot be reached"
    elif ((keepalive == 0)); then  # what it waits for first is across the cut
      # A rank on the cut-off node may wait for its neighbour instead: the victim cuts at the
      # start of its call, and when the peer's data across the cut arrived before the NICs
      # went down (a race, seen once in a loaded run on 2026-12-07), this rank finished phase 2
      # and waits for the victim's phase 3, which waits across the cut. cutoff_check.sh
      # above has already required the far ranks named as unreachable.
      local waited=$other
      ((r >= n)) && waited="$other|$node1"
      grep -Eq "\(CHORUS_TIMEOUT\), waiting for (data from )?rank ($waited)\b" <<<"$line" ||
        fail "rank $r's timeout does not say it waits for a rank it should ($waited)"
    fi
  done
  if [[ -n $follower ]]; then
    # Rank 1, at its own deadline (before rank 0's), names rank 2N-1 through rank 0's report.
    local last=$((world - 1))
    line=$(grep "^\[1\] rank 1: ERROR after" "$log")
    grep -Eq "no progress for 14\.0+ s" <<<"$line" || fail "rank 1's deadline was not its own 14 s"
    grep -Eq "rank $last cannot be reached: [0-9]+ resends or probes in a row from rank 0 " <<<"$line" ||
      fail "rank 1 does not name rank $last as cut off as seen from rank 0 (rank 0's report)"
  fi
  echo "bed_test: OK: node 1 cut off over $net (keepalive ${keepalive}s${follower:+, rank 1 following}); every" \
    "rank failed within $limit_ms ms, naming the other side"
}

# A rank stopped on a live host: the probes of its host are answered (by its kernel), so it
# is named as not waiting, never as unreachable.
stopped() {
  local n=$1 build=$2 net=$3 world=$(($1 * 2))
  [[ $net == ucx ]] || fail "stop: only over ucx (tcp: the fault suite's stop trials)"
  bring_up 2 1gbit "$n ranks per node over $net, rank $n stopped at call 2"
  "$bed" run -b "$id" -n "$n" -t 30 -e CHORUS_KEEPALIVE=0s -e CHORUS_NET=ucx \
    -e CHORUS_UCX_NET_DEVICES=auto -e CHORUS_DEBUG=INFO -e UCX_TCP_KEEPIDLE=60s \
    -e CHORUS_TIMEOUT=10s -- "$build/tests/fault/chorus_fault_trial" --fault stop \
    --victim "$n" --at 2 --calls 6 --seed 5 >"$log" 2>&1
  local rc=$?
  grep -E "^\[[0-9]+\] rank [0-9]+: (FAULT|ERROR|OK|WRONG)" "$log" | cut -c1-600
  # 3: the others' errors (the bed stops the stopped rank once they are out); 124: the limit
  ((rc == 3 || rc == 124)) || fail "the run's status is $rc, not 3 (the others fail) or 124"
  grep -q "rank $n: FAULT stop at call 2" "$log" || fail "rank $n did not stop"
  local used
  used=$(grep -c "ready: transport ucx" "$log")
  ((used == world)) || fail "$used of $world ranks used ucx"
  local r line
  for ((r = 0; r < world; ++r)); do
    ((r == n)) && continue
    line=$(grep "^\[$r\] rank $r: ERROR after" "$log") || fail "rank $r reported no error"
    grep -q "rank $n[^0-9]" <<<"$line" || fail "rank $r does not name the stopped rank $n"
    grep -q "cannot be reached" <<<"$line" && fail "rank $r calls a rank on a live host unreachable"
  done
  echo "bed_test: OK: rank $n stopped over $net; every other rank named it, none as unreachable"
}

# The same cut under torch.distributed (tests/torch/cutoff_worker.py): torch's TCPStore is
# the rendezvous, so only the transport's connections can tell; every rank must raise naming
# a rank across the cut, over tcp within a third of the group's 60 s timeout (CHORUS_KEEPALIVE
# and the resend limit), over ucx within 30 s of a 12 s timeout (see below).
torch_cutoff() {
  local n=$1 build=$2 net=${3:-tcp} world=$(($1 * 2)) torch_dir bounds=()
  torch_dir=$(cd "$here/../torch" && pwd)
  # ucx: a rank with data in flight across the cut fails at the group's deadline (12 s here),
  # naming the other side from its probes (cutoff_worker.py says why).
  [[ $net == ucx ]] && bounds=(-e CUTOFF_GROUP_TIMEOUT_S=12 -e CUTOFF_BOUND_S=30)
  bring_up 2 1gbit "$n ranks per node under torch.distributed over $net, node 1 cut off"
  "$bed" run -b "$id" -n "$n" -t 120 -e CHORUS_KEEPALIVE=4s -e CHORUS_TRANSPORT="$net" "${bounds[@]}" \
    -e CHORUS_DEBUG=INFO -e PYTHONPATH="$build/python" -e PYTHONWARNINGS=ignore -- sh -c "cd '$torch_dir' &&
      RANK=\$CHORUS_RANK WORLD_SIZE=\$CHORUS_WORLD_SIZE MASTER_ADDR=\$CHORUS_ADDR \
      MASTER_PORT=\$CHORUS_PORT exec /usr/bin/python3 cutoff_worker.py" >"$log" 2>&1
  local rc=$?
  grep -E "CUT|ok|FAIL|exited" "$log" | cut -c1-1500
  grep -q "rank $n: CUT" "$log" || fail "the cut was not made"
  local used
  used=$(grep -c "ready: transport $net" "$log")
  ((used == world)) || fail "$used of $world ranks used $net"
  local r
  for ((r = 0; r < world; ++r)); do
    grep -q "^\[$r\] rank $r: ok error after" "$log" || fail "rank $r did not fail in time naming the other side"
  done
  ((rc == 0)) || fail "the run's status is $rc, not 0"
  echo "bed_test: OK: node 1 cut off under torch.distributed; every rank named the other side"
}

# The bed's id, from run's "netns_bed: bed ID: ..." line.
bed_of() { sed -n 's/^netns_bed: bed \(cb[0-9a-f]\{6\}\):.*/\1/p' "$log" | head -1; }
gone() { [[ -n $1 && -z $(ip netns list | grep "^$1") && ! -e $state/$1 ]]; }

cleanup() {
  local b rc
  # A rank that fails: its status comes back, the others are stopped, the bed removed.
  CHORUS_BED_GRACE=2 "$bed" run -k 2 -m 1 -r 0 -n 2 -t 30 -- sh -c '[ "$CHORUS_RANK" = 1 ] && exit 3; sleep 60' \
    >"$log" 2>&1
  rc=$?
  b=$(bed_of)
  ((rc == 3)) || { cat "$log"; fail "failing rank: status $rc, not 3"; }
  gone "$b" || fail "bed '$b' left behind after a failing rank"
  # The timeout.
  "$bed" run -k 2 -m 1 -r 100mbit -n 1 -t 1 -- sleep 30 >"$log" 2>&1
  rc=$?
  b=$(bed_of)
  ((rc == 124)) || { cat "$log"; fail "timeout: status $rc, not 124"; }
  gone "$b" || fail "bed '$b' left behind after a timeout"
  # An interrupt (TERM: a background job of a script ignores INT).
  "$bed" run -k 2 -m 2 -r 1gbit -n 2 -t 60 -- sleep 30 >"$log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do
    b=$(bed_of)
    [[ -n $b ]] && break
    sleep 0.1
  done
  sleep 1
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  ((rc == 143)) || { cat "$log"; fail "interrupt: status $rc, not 143"; }
  gone "$b" || fail "bed '$b' left behind after an interrupt"
  ip netns list | grep -q "^${b}" && fail "namespaces left"
  echo "bed_test: OK: cleanup after failure, timeout and interrupt"
}

case ${1:-} in
  collectives) shift; collectives "$@" ;;
  ucx) shift; ucx_rails "$@" ;;
  ucx_keepalive) shift; ucx_keepalive "$@" ;;
  bind) shift; bind_decision "$@" ;;
  cutoff) shift; cutoff "$@" ;;
  stop) shift; stopped "$@" ;;
  torch_cutoff) shift; torch_cutoff "$@" ;;
  cleanup) cleanup ;;
  *) sed -n '2,49p' "$0" >&2; exit 2 ;;
esac
