#!/bin/sh
# own_hosts.sh COMMAND...: runs COMMAND in a private network and UTS namespace that has one
# NIC besides loopback (a veth pair, d0 = 10.77.0.1) with CHORUS_SOCKET_IFNAME==d0, so that
# ranks which take hostnames of their own (chorus_kill_test --node-size) can reach each
# other as separate hosts. Everything goes when COMMAND's processes exit. Exit 77 (skipped)
# where namespaces cannot be made (not root).
unshare -n -u true 2>/dev/null || exit 77
exec unshare -n -u sh -c 'ip link set lo up &&
  ip link add d0 type veth peer name d1 && ip addr add 10.77.0.1/24 dev d0 &&
  ip link set d0 up && ip link set d1 up && CHORUS_SOCKET_IFNAME==d0 exec "$@"' own_hosts "$@"
