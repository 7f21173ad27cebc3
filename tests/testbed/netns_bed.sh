#!/usr/bin/env bash
# A test bed of K emulated nodes with M NICs each on one machine (needs root).
#
#   netns_bed.sh up K M RATE          build one, print its id (it stays until `down ID`)
#   netns_bed.sh down ID              remove it (namespaces, links, processes left in them)
#   netns_bed.sh list                 the beds on this machine
#   netns_bed.sh run [-b ID | -k K -m M -r RATE] -n N -t SEC [-e VAR=VAL]... -- prog [args]
#                                     N ranks per node of prog; without -b on a bed of its
#                                     own, removed when the run ends, fails or is interrupted
#
# Layout of bed ID: node i is network namespace ${ID}n$i with NICs rail0..rail$((M-1)),
# addressed 10.77.<rail>.<i+1>/24; namespace ${ID}sw holds one bridge per rail joining
# the nodes' veth pairs. Every NIC is limited to RATE each way with tc tbf (on the node
# end for sending, on the switch end for receiving); RATE is a tc rate such as 1gbit or
# 500mbit, or 0 for no limit. Only addresses inside the namespaces are used, and the
# names carry the random ID, so beds in parallel do not collide.
#
# Ranks get CHORUS_RANK, CHORUS_WORLD_SIZE, CHORUS_LOCAL_RANK, CHORUS_LOCAL_SIZE, CHORUS_ADDR (node 0's rail0
# address), CHORUS_PORT (rank 0 hosts the store there), CHORUS_SOCKET_IFNAME=rail,
# CHORUS_TOPO_FILE (the bed's NIC speeds; both unless already set) and CHORUS_BED_NODE;
# every line of output is prefixed with "[rank] ". Exit status: 0 when
# every rank exits 0, 124 on the timeout, 77 when this machine cannot make namespaces (1
# under CI=true), else
# the first failing rank's status (130/143 when interrupted).
set -uo pipefail

readonly STATE_ROOT=${CHORUS_BED_STATE:-/tmp/chorus-bed}
readonly PORT=29500

die() {
  echo "netns_bed: $*" >&2
  exit 2
}
usage() {
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
need_uint() { [[ $2 =~ ^[1-9][0-9]{0,2}$ ]] || die "$1 must be a number from 1 to 999, not '$2'"; }

# tc rate ("1gbit", "500mbit", "2.5gbit") -> bytes per second; 0 means unlimited.
rate_bytes() {
  local r=${1,,}
  [[ $r == 0 ]] && { echo 0; return; }
  [[ $r =~ ^([0-9]+)(\.[0-9]+)?(kbit|mbit|gbit)$ ]] || die "bad rate '$1' (examples: 1gbit, 500mbit, 0)"
  local scale=1000
  [[ ${BASH_REMATCH[3]} == mbit ]] && scale=1000000
  [[ ${BASH_REMATCH[3]} == gbit ]] && scale=1000000000
  awk -v v="${BASH_REMATCH[1]}${BASH_REMATCH[2]}" -v s=$scale 'BEGIN { printf "%d\n", v * s / 8 }'
}

# Limits egress of $2 in namespace $1. The bucket holds 10 ms of traffic (at least 256 KiB,
# so a 64 KiB GSO packet always fits); 50 ms of queue before drops.
tbf_burst() {  # tbf_burst RATE: the token bucket's bytes for RATE (0: no shaper)
  local bytes
  bytes=$(rate_bytes "$1")
  ((bytes == 0)) && { echo 0; return; }
  echo $((bytes / 100 > 262144 ? bytes / 100 : 262144))
}

limit() {
  local ns=$1 dev=$2 rate=$3 burst
  burst=$(tbf_burst "$rate")
  ((burst == 0)) && return 0
  ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$rate" burst "$burst" latency 50ms
}

reaches() {
  for _ in $(seq 50); do
    [[ $(ip netns exec "$1" timeout 2 bash -c "exec 3<>/dev/tcp/$2/9" 2>&1) == *refused* ]] && return 0
    sleep 0.1
  done
  return 1
}

bed_namespaces() { ip netns list | awk '{print $1}' | grep -E "^$1(n[0-9]+|sw)$"; }

do_down() {
  local id=$1 ns pid
  [[ $id =~ ^cb[0-9a-f]{6}$ ]] || die "not a bed id: '$id'"
  for ns in $(bed_namespaces "$id"); do
    # Processes still inside (ranks of an interrupted run) keep a namespace alive.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "${STATE_ROOT:?}/$id"
}

do_up() {
  local k=$1 m=$2 rate=$3 id node rail
  need_uint K "$k"
  need_uint M "$m"
  ((k <= 250 && m <= 250)) || die "at most 250 nodes and 250 NICs"
  rate_bytes "$rate" >/dev/null
  for _ in 1 2 3 4 5; do
    id=cb$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
    [[ -z $(bed_namespaces "$id") && ! -e $STATE_ROOT/$id ]] && break
  done
  mkdir -p "$STATE_ROOT/$id" || die "cannot create $STATE_ROOT/$id"
  printf 'K=%s\nM=%s\nRATE=%s\n' "$k" "$m" "$rate" >"$STATE_ROOT/$id/bed.env"
  # From here on a failure removes what was made.
  trap 'do_down '"$id"'; exit 2' ERR
  set -E
  if ! ip netns add "${id}sw" 2>/dev/null; then
    rm -rf "${STATE_ROOT:?}/$id"
    echo "netns_bed: cannot create network namespaces here (needs root / CAP_SYS_ADMIN)" >&2
    [[ ${CI:-} == true ]] && exit 1  # CI must run the bed's tests: a failure there
    exit 77
  fi
  ip -n "${id}sw" link set lo up
  for ((rail = 0; rail < m; ++rail)); do
    ip -n "${id}sw" link add "br$rail" type bridge
    ip -n "${id}sw" link set "br$rail" up
  done
  for ((node = 0; node < k; ++node)); do
    local ns=${id}n$node
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    for ((rail = 0; rail < m; ++rail)); do
      local port=n${node}r$rail
      ip link add "rail$rail" netns "$ns" type veth peer name "$port" netns "${id}sw"
      ip -n "${id}sw" link set "$port" master "br$rail" up
      ip -n "$ns" addr add "10.77.$rail.$((node + 1))/24" dev "rail$rail"
      ip -n "$ns" link set "rail$rail" up
      limit "$ns" "rail$rail" "$rate"
      limit "${id}sw" "$port" "$rate"
    done
  done
  set +E
  trap - ERR
  # What the probe cannot see (veth says 10 Gbit/s whatever tbf allows), for CHORUS_TOPO_FILE.
  {
    echo "# test bed $id: $k nodes x $m NICs at $rate"
    for ((rail = 0; rail < m; ++rail)); do
      [[ $rate == 0 ]] || echo "nic rail$rail speed ${rate,,}"
    done
  } >"$STATE_ROOT/$id/bed.topo"
  # ... nor the shaper's burst, which the ranks' tuner takes from CHORUS_NIC_BURST.
  tbf_burst "$rate" >"$STATE_ROOT/$id/nic_burst"
  # Every rail reaches every node: a connection to a closed port is refused, not lost
  # (links need a moment to come up: retry for up to 5 s).
  for ((node = 1; node < k; ++node)); do
    for ((rail = 0; rail < m; ++rail)); do
      reaches "${id}n0" "10.77.$rail.$((node + 1))" ||
        { do_down "$id"; die "rail $rail does not reach node $node"; }
    done
  done
  echo "$id"
}

do_list() {
  ip netns list | awk '{print $1}' | sed -n 's/^\(cb[0-9a-f]\{6\}\)sw$/\1/p'
}

# Runs N ranks per node of the bed; returns the exit status described above.
run_ranks() {
  local id=$1 n=$2 timeout=$3
  shift 3
  local k
  k=$(bed_namespaces "$id" | grep -cE "^${id}n[0-9]+$")
  ((k > 0)) || die "no bed '$id'"
  local world=$((k * n)) pids=() node lr rank
  declare -gA RANK_OF=()
  for ((node = 0; node < k; ++node)); do
    for ((lr = 0; lr < n; ++lr)); do
      rank=$((node * n + lr))
      ip netns exec "${id}n$node" env CHORUS_RANK=$rank CHORUS_WORLD_SIZE=$world \
        CHORUS_LOCAL_RANK=$lr CHORUS_LOCAL_SIZE=$n CHORUS_ADDR=10.77.0.1 CHORUS_PORT=$PORT \
        CHORUS_SOCKET_IFNAME="${CHORUS_SOCKET_IFNAME:-rail}" CHORUS_BED_NODE=$node \
        CHORUS_TOPO_FILE="${CHORUS_TOPO_FILE:-$STATE_ROOT/$id/bed.topo}" \
        CHORUS_NIC_BURST="${CHORUS_NIC_BURST:-$(cat "$STATE_ROOT/$id/nic_burst" 2>/dev/null || echo 0)}" \
        "${EXTRA_ENV[@]}" timeout --kill-after=5 "$timeout" "$@" \
        > >(sed -u "s/^/[$rank] /") 2>&1 </dev/null &
      pids+=($!)
      RANK_OF[$!]=$rank
    done
  done
  RANK_PIDS=("${pids[@]}")
  # Poll (wait -n misses ranks that ended before it was called). After the first failure
  # the others get CHORUS_BED_GRACE seconds (10) to notice and report, then are stopped.
  local status=0 pid rc stop_at="" left=("${pids[@]}") running
  while ((${#left[@]})); do
    running=()
    for pid in "${left[@]}"; do
      if kill -0 "$pid" 2>/dev/null; then
        running+=("$pid")
        continue
      fi
      wait "$pid"
      rc=$?
      ((rc == 0)) || echo "netns_bed: rank ${RANK_OF[$pid]} exited with status $rc" >&2
      if ((rc != 0 && status == 0)); then
        status=$rc
        stop_at=$((SECONDS + ${CHORUS_BED_GRACE:-10}))
      fi
    done
    left=("${running[@]}")
    if [[ -n $stop_at ]] && ((SECONDS >= stop_at && ${#left[@]})); then
      kill -TERM "${left[@]}" 2>/dev/null
      stop_at=""
    fi
    ((${#left[@]})) && sleep 0.2
  done
  wait 2>/dev/null
  return $status
}

do_run() {
  local bed="" k="" m="" rate="" n="" timeout=""
  EXTRA_ENV=()
  while (($#)); do
    case $1 in
      -b) bed=$2; shift 2 ;;
      -k) k=$2; shift 2 ;;
      -m) m=$2; shift 2 ;;
      -r) rate=$2; shift 2 ;;
      -n) n=$2; shift 2 ;;
      -t) timeout=$2; shift 2 ;;
      -e) [[ $2 == *=* ]] || die "-e wants VAR=VALUE"; EXTRA_ENV+=("$2"); shift 2 ;;
      --) shift; break ;;
      *) usage ;;
    esac
  done
  (($#)) || usage
  need_uint N "$n"
  [[ $timeout =~ ^[1-9][0-9]*$ ]] || die "-t SEC is required (a whole number of seconds)"
  local own=""
  if [[ -z $bed ]]; then
    [[ -n $k && -n $m && -n $rate ]] || die "run needs -b ID, or -k K -m M -r RATE"
    bed=$(do_up "$k" "$m" "$rate") || exit $?
    own=$bed
    echo "netns_bed: bed $bed: $k nodes x $m NICs at $rate" >&2
  fi
  RANK_PIDS=()
  # Interrupted or failed: stop the ranks, then remove a bed of our own.
  local stop='kill -TERM "${RANK_PIDS[@]}" 2>/dev/null; [[ -n "'"$own"'" ]] && do_down "'"$own"'"'
  # shellcheck disable=SC2064
  trap "$stop; exit 130" INT
  # shellcheck disable=SC2064
  trap "$stop; exit 143" TERM
  trap '[[ -n "'"$own"'" ]] && do_down "'"$own"'"' EXIT
  run_ranks "$bed" "$n" "$timeout" "$@"
  exit $?
}

[[ $# -ge 1 ]] || usage
cmd=$1
shift
case $cmd in
  up) (($# == 3)) || usage; do_up "$@" ;;
  down) (($# == 1)) || usage; do_down "$1" ;;
  list) do_list ;;
  run) do_run "$@" ;;
  *) usage ;;
esac
