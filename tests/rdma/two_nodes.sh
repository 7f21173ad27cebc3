#!/bin/bash
# Two real nodes over Soft-RoCE: boots two qemu guests of the softroce.sh bed at once, each
# with two virtio-net NICs; guest A's NIC i and guest B's NIC i are one link (rail i), a
# TCP connection on the host's loopback (qemu's socket netdev). Each guest runs node_suite.sh: rail i gets
# 10.80.i.<node+1>/24 and its own rxe device (rxe0 on eth0, rxe1 on eth1), two ranks per
# node talk shm inside and CHORUS_NET=ib between the nodes.
#
# Usage: two_nodes.sh [KEY=VALUE...]   (passed to both guests' /mnt/env: BUILD, SRC, ...)
# Exit: 0 when both guests' suites passed; 1 when a part failed or a guest did not boot
#   or finish; 77 when softroce.sh skips (no qemu; 1 under CI=true).
# Env: WORK (shared with softroce.sh: kernel cache), TIMEOUT (per guest, default 240 s),
#   MEM (per guest, default 1G), SMP (per guest, default 1: the two guests share 2 cores),
#   HOST_PATHS (as softroce.sh).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-/tmp/chorus-softroce-$(id -u)}
export WORK TIMEOUT=${TIMEOUT:-240} MEM=${MEM:-1G} SMP=${SMP:-1}
RUN=$WORK/two_nodes
rm -rf "$RUN"; mkdir -p "$RUN/common"
t0=$(date +%s.%N)

# Rail i is a TCP stream between the guests' NIC i (reliable: a UDP link drops frames
# when a guest falls behind, and rxe's retransmission then stalls for its timeout).
# Node 0 listens on two free loopback ports; node 1 connects once they listen.
read -r -a ports <<< "$(python3 - <<'PY'
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
)"
[ ${#ports[@]} = 2 ] || { echo "two_nodes: FAIL: no free TCP ports"; exit 1; }

net_args() {  # net_args NODE: two virtio-net NICs, rail i on port i
  local node=$1 args="" rail
  for rail in 0 1; do
    if [ "$node" = 0 ]; then
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
    NET_ARGS="$(net_args "$node")" \
    nice -n 5 bash "$HERE/softroce.sh" "$HERE/node_suite.sh" NODE="$node" "$@" \
    > "$RUN/node$node.out" 2>&1 &
  pids+=($!)
}
listening() { [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]; }

pids=()
start_node 0 "$@"
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
start_node 1 "$@"
rcs=()
for i in 0 1; do
  wait "${pids[$i]}"
  rcs+=($?)
done
t1=$(date +%s.%N)
for node in 0 1; do
  echo "===== node $node (exit ${rcs[$node]})"
  grep -v '^\[init\]' "$RUN/node$node.out" | grep -v '^$'
done
echo "two_nodes: $(awk "BEGIN{printf \"%.0f\", $t1-$t0}") s; node exits ${rcs[*]}"
for rc in "${rcs[@]}"; do [ "$rc" = 77 ] && exit 77; done
for rc in "${rcs[@]}"; do [ "$rc" = 0 ] || exit 1; done
exit 0
