#!/usr/bin/env bash
# What the bed's tc tbf shapers count per TCP packet, and the payload rate a flow gets
# (docs/sim.md, seventeenth session). A bed of 2 nodes x 1 NIC at 1000mbit; cases: one flow
# n0 -> n1; one flow each way at once (a ring step: a node's egress carries its data and
# the ACKs of what it receives); two flows each way (the transport's two streams).
# Per case: each receiver's steady payload rate and MSS, and every shaper's bytes and
# packets (tc -s), TcpOutSegs per node.
#   flock /work/measure.lock chrt -f 1 framing.sh [MBYTES=256]
set -u
d=$(cd "$(dirname "$0")" && pwd) mb=${1:-256}
bed=/work/wt/sim16/tests/testbed/netns_bed.sh py=/usr/bin/python3
id=$($bed up 2 1 1000mbit) || exit 1
trap '$bed down $id' EXIT
counters() {
  for i in 0 1; do echo "n$i rail0: $(ip netns exec ${id}n$i tc -s qdisc show dev rail0 | grep -o 'Sent [0-9]* bytes [0-9]* pkt')  $(ip netns exec ${id}n$i nstat -az TcpOutSegs | grep TcpOutSegs)"; done
  for i in 0 1; do echo "sw n${i}r0: $(ip netns exec ${id}sw tc -s qdisc show dev n${i}r0 | grep -o 'Sent [0-9]* bytes [0-9]* pkt')"; done
}
run_case() {  # name, then "from to port" triples
  local name=$1; shift
  echo "## $name"; counters | sed 's/^/before /'
  local pids=() outs=()
  while (($#)); do
    local from=$1 to=$2 port=$3; shift 3
    local o=$(mktemp); outs+=("$o")
    ip netns exec ${id}n$to $py "$d/flow.py" recv "$port" >"$o" &
    pids+=($!)
  done
  sleep 0.5
  echo "$CASE_SENDS" | while read -r from to port; do
    [[ -z $from ]] && continue
    ip netns exec ${id}n$from $py "$d/flow.py" send 10.77.0.$((to + 1)) "$port" "$mb" &
  done
  wait "${pids[@]}"
  for o in "${outs[@]}"; do cat "$o"; rm -f "$o"; done
  counters | sed 's/^/after /'
}
uptime
CASE_SENDS="0 1 5001" run_case "one flow n0 -> n1" 0 1 5001
CASE_SENDS="0 1 5002
1 0 5003" run_case "one flow each way" 0 1 5002 1 0 5003
CASE_SENDS="0 1 5004
0 1 5005
1 0 5006
1 0 5007" run_case "two flows each way" 0 1 5004 0 1 5005 1 0 5006 1 0 5007
uptime
