#!/bin/bash
# Two real nodes over Soft-RoCE: boots two qemu guests of the softroce.sh bed at once, each
# with two virtio-net NICs; guest A's NIC i and guest B's NIC i are one link (rail i). Each
# guest runs node_suite.sh: rail i gets 10.80.i.<node+1>/24 and its own rxe device (rxe0 on
# eth0, rxe1 on eth1), two ranks per node talk shm inside and CHORUS_NET=ib between the nodes.
#
# The link (LINK): `tap` (as root with /dev/net/tun): each NIC a tap on a Linux bridge per
#   rail, in a network namespace of its own (removed at exit), qemu run in it; `socket`:
#   each rail a TCP connection on the host's loopback (qemu's socket netdev); `auto` (the
#   default): tap where it can be made, else socket. The socket link stalled in CI (the
#   guest's virtio-net transmit queue made no progress for 180 s, NETDEV WATCHDOG, under
#   2 cores' load): its two qemu processes hold each other's frames in one TCP stream, where
#   the bridge's queues decouple them (a full queue drops a frame and RC retransmits it).
#   The guests get LINK=tap|socket in /mnt/env.
#
# The cut (node_suite.sh's cutoff part, tap link only): once a guest creates
# common/cutoff.running, node 1's taps leave both rails' bridges (ip link set nomaster):
# its frames reach no one and none reach it, while every link stays up (nothing errs at
# once, as where a switch port dies); then common/cutoff.cut says when.
#
# Usage: two_nodes.sh [KEY=VALUE...]   (passed to both guests' /mnt/env: BUILD, SRC, ...)
# Exit: 0 when both guests' suites passed; 1 when a part failed or a guest did not boot
#   or finish; 77 when softroce.sh skips (no qemu; 1 under CI=true).
# Env: WORK (shared with softroce.sh: kernel cache), TIMEOUT (per guest, default 240 s),
#   MEM (per guest, default 1G), SMP (per guest, default 1: the two guests share 2 cores),
#   HOST_PATHS (as softroce.sh), LINK (tap | socket | auto).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-/tmp/chorus-softroce-$(id -u)}
export WORK TIMEOUT=${TIMEOUT:-240} MEM=${MEM:-1G} SMP=${SMP:-1}
RUN=$WORK/two_nodes
rm -rf "$RUN"; mkdir -p "$RUN/common"
t0=$(date +%s.%N)

LINK=${LINK:-auto}
NS=chorus-two-nodes-$$
tap_link() {  # tap_link: the netns with a bridge per rail and a tap per NIC; fails cleanly
  [ "$(id -u)" = 0 ] && [ -c /dev/net/tun ] && command -v ip > /dev/null || return 1
  # Namespaces a killed run left behind (its pid gone).
  local ns rail node
  for ns in $(ip netns list 2>/dev/null | awk '/^chorus-two-nodes-/{print $1}'); do
    kill -0 "${ns##*-}" 2>/dev/null || ip netns del "$ns" 2>/dev/null
  done
  ip netns add "$NS" 2>/dev/null || return 1
  for rail in 0 1; do
    ip -n "$NS" link add "br$rail" type bridge &&
      ip -n "$NS" link set "br$rail" type bridge forward_delay 0 stp_state 0 || return 1
    for node in 0 1; do
      ip -n "$NS" tuntap add dev "r${rail}n$node" mode tap &&
        ip -n "$NS" link set "r${rail}n$node" master "br$rail" up || return 1
    done
    ip -n "$NS" link set "br$rail" up || return 1
  done
}
made_ns=0
cutter=""
cleanup() {
  [ -z "$cutter" ] || kill "$cutter" 2>/dev/null
  [ "$made_ns" = 0 ] || ip netns del "$NS" 2>/dev/null
}
trap cleanup EXIT
case $LINK in
  auto | tap)
    if tap_link; then
      made_ns=1 LINK=tap
    else
      ip netns del "$NS" 2>/dev/null  # what tap_link made before it failed
      [ "$LINK" = auto ] || { echo "two_nodes: FAIL: LINK=tap: could not make the taps"; exit 1; }
      LINK=socket
    fi ;;
  socket) ;;
  *) echo "two_nodes: LINK must be tap, socket or auto (was $LINK)"; exit 2 ;;
esac
echo "two_nodes: link $LINK"
QEMU_PREFIX=
[ "$LINK" != tap ] || QEMU_PREFIX="ip netns exec $NS"

# The socket link: node 0 listens on two free loopback ports; node 1 connects once they listen.
ports=()
if [ "$LINK" = socket ]; then
  read -r -a ports <<< "$(python3 - <<'PY'
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
)"
  [ ${#ports[@]} = 2 ] || { echo "two_nodes: FAIL: no free TCP ports"; exit 1; }
fi

net_args() {  # net_args NODE: two virtio-net NICs, rail i on its tap or port i
  local node=$1 args="" rail
  for rail in 0 1; do
    if [ "$LINK" = tap ]; then
      args+=" -netdev tap,id=rail$rail,ifname=r${rail}n$node,script=no,downscript=no"
    elif [ "$node" = 0 ]; then
      args+=" -netdev socket,id=rail$rail,listen=127.0.0.1:${ports[$rail]}"
    else
      args+=" -netdev socket,id=rail$rail,connect=127.0.0.1:${ports[$rail]}"
    fi
    # romfile=: no iPXE option ROM (seconds of emulated boot firmware)
    args+=" -device virtio-net-pci,netdev=rail$rail,mac=52:54:00:80:0$rail:0$node,romfile="
  done
  echo "$args"
}

start_node() {  # start_node NODE KEY=VALUE...
  local node=$1; shift
  SHARE=$RUN/node$node CONSOLE=$RUN/console$node.log COMMON=$RUN/common \
    NET_ARGS="$(net_args "$node")" QEMU_PREFIX="$QEMU_PREFIX" \
    nice -n 5 bash "$HERE/softroce.sh" "$HERE/node_suite.sh" NODE="$node" LINK="$LINK" "$@" \
    > "$RUN/node$node.out" 2>&1 &
  pids+=($!)
}
listening() { [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]; }

cut_node1() {  # cut_node1: waits for the guests' mark, then cuts node 1 off both rails
  until [ -e "$RUN/common/cutoff.running" ]; do sleep 0.2; done
  if ip -n "$NS" link set r0n1 nomaster && ip -n "$NS" link set r1n1 nomaster; then
    echo "two_nodes: node 1 cut off at $(date +%T.%N | cut -c1-12) (its taps off the bridges)"
    : > "$RUN/common/cutoff.cut"
  else
    echo "two_nodes: FAIL: could not cut node 1 off"
  fi
}
if [ "$LINK" = tap ]; then
  cut_node1 &
  cutter=$!
fi

pids=()
start_node 0 "$@"
if [ "$LINK" = socket ]; then
  # Node 0 may first fetch and unpack the kernel (minutes, once): wait while it lives.
  end=$(($(date +%s) + TIMEOUT + 600))
  until listening "${ports[0]}" && listening "${ports[1]}"; do
    if ! kill -0 "${pids[0]}" 2>/dev/null || [ "$(date +%s)" -ge "$end" ]; then
      wait "${pids[0]}"; rc=$?
      cat "$RUN/node0.out"
      echo "two_nodes: node 0 never listened on its rails (exit $rc)"
      [ "$rc" = 77 ] && exit 77
      exit 1
    fi
    sleep 0.2
  done
fi
# (On taps both boot at once: the second waits for the first's kernel preparation, a lock.)
start_node 1 "$@"
rcs=()
for i in 0 1; do
  wait "${pids[$i]}"
  rcs+=($?)
done
t1=$(date +%s.%N)
[ -z "$cutter" ] || kill "$cutter" 2>/dev/null
for node in 0 1; do
  echo "===== node $node (exit ${rcs[$node]})"
  grep -v '^\[init\]' "$RUN/node$node.out" | grep -v '^$'
done
echo "two_nodes: $(awk "BEGIN{printf \"%.0f\", $t1-$t0}") s; node exits ${rcs[*]}"
for rc in "${rcs[@]}"; do [ "$rc" = 77 ] && exit 77; done
for rc in "${rcs[@]}"; do [ "$rc" = 0 ] || exit 1; done
exit 0
