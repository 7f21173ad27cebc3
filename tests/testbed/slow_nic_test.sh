#!/usr/bin/env bash
# Striping under a path that slows down mid-transfer (label `topology`): 2 nodes x 2 NICs
# at RATE, one rank per node, all-reduces of 16 MiB checked by chorus-perf. Once the NICs
# have sent SLOW_AFTER bytes (a byte count, not a time, so a loaded machine does not move
# the point), rail1 drops to RATE/10 in both directions on both nodes. Passes only if
#  - every tc change succeeded and the run finished with every element right;
#  - before the slow-down both NICs carried traffic (rail1 >= MIN_SHARE_BEFORE% of bytes);
#  - after it the fast NIC carried at least MIN_FAST_SHARE of the bytes the nodes sent
#    (the kernel's own NIC counters, not the library's report: ideal 10/11 = 91%, fixed
#    equal weights 50%; 75% measured on a loaded 2-core machine), and in the library's
#    final report each direction gives rail0's paths together MIN_FAST_WEIGHT or more.
# TRANSPORT tcp stripes over the NICs with its own streams; ucx with one UCX worker per
# NIC (CHORUS_UCX_NET_DEVICES=auto), each a rail of the channel.
#   slow_nic_test.sh BUILD_DIR [RATE_MBIT=300] [TRANSPORT=tcp|ucx]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bed=$here/netns_bed.sh build=$1 mbit=${2:-300} transport=${3:-tcp}
case $transport in
  tcp) transport_env=(-e CHORUS_NET=tcp) ;;
  ucx) transport_env=(-e CHORUS_NET=ucx -e CHORUS_UCX_NET_DEVICES=auto) ;;
  *) echo "slow_nic_test: unknown transport '$transport'"; exit 2 ;;
esac
# The floors leave room for a loaded machine (rates are measured, so shares are timing):
# before, rail1 a tenth (it carries nothing if left out); after, 60% (equal weights give
# 50%); the polling loop may see the SLOW_AFTER mark late, so only 128 MiB of the ~290
# that follow it must move after the slow-down.
readonly SLOW_AFTER=$((128 << 20)) MIN_SHARE_BEFORE=10 MIN_FAST_SHARE=60 MIN_FAST_WEIGHT=55
log=$(mktemp /tmp/chorus-slow-nic.XXXXXX)
marks=$(mktemp /tmp/chorus-slow-nic-marks.XXXXXX)
id=$("$bed" up 2 2 "${mbit}mbit")
rc=$?
[[ $rc == 77 ]] && exit 77
[[ $rc != 0 || -z $id ]] && { echo "slow_nic_test: FAIL: bed up ($rc)"; exit 1; }
trap '"$bed" down "$id"; rm -f "$log" "$marks"' EXIT
fail() { echo "slow_nic_test: FAIL: $*"; exit 1; }

# Bytes sent by both nodes on rail R (the node end of each veth: what the node sends).
sent() {
  local total=0 n v
  for n in 0 1; do
    v=$(ip netns exec "${id}n$n" cat "/sys/class/net/rail$1/statistics/tx_bytes") || return 1
    total=$((total + v))
  done
  echo "$total"
}
start0=$(sent 0) start1=$(sent 1) || fail "cannot read the NIC counters"

slow=$((mbit / 10))mbit
( deadline=$((SECONDS + 200))
  while (( $(sent 0) + $(sent 1) - start0 - start1 < SLOW_AFTER )); do
    ((SECONDS < deadline)) || { echo "timeout" >"$marks"; exit 1; }
    sleep 0.05
  done
  at0=$(sent 0) at1=$(sent 1)
  for n in 0 1; do
    ip netns exec "${id}n$n" tc qdisc change dev rail1 root tbf rate "$slow" burst 262144 latency 50ms &&
      ip netns exec "${id}sw" tc qdisc change dev "n${n}r1" root tbf rate "$slow" burst 262144 latency 50ms ||
      { echo "tc" >"$marks"; exit 1; }
  done
  # The limit really is in place on all four ends.
  for q in "${id}n0 rail1" "${id}n1 rail1" "${id}sw n0r1" "${id}sw n1r1"; do
    set -- $q
    ip netns exec "$1" tc qdisc show dev "$2" | grep -q "tbf .* rate ${slow%mbit}Mbit " ||
      { echo "tc-show $1 $2: $(ip netns exec "$1" tc qdisc show dev "$2")" >"$marks"; exit 1; }
  done
  echo "ok $at0 $at1" >"$marks"
  echo "slow_nic_test: rail1 now at $slow (after $(((at0 + at1 - start0 - start1) >> 20)) MiB)" ) &
slower=$!
"$bed" run -b "$id" -n 1 -t 240 -e CHORUS_SOCKET_IFNAME=rail -e CHORUS_DEBUG=INFO "${transport_env[@]}" -- \
  "$build/perf/chorus-perf" -b 16M -e 16M -n 12 -w 1 -T 0 -c 3 >"$log" 2>&1
rc=$?
end0=$(sent 0) end1=$(sent 1)
wait "$slower"
grep -E "rail|Out of bounds|^\[0\] +[0-9]" "$log" | grep -v "reduce\." | tail -12
[[ $rc == 0 ]] || { tail -20 "$log"; fail "the run failed ($rc)"; }
grep -q "Out of bounds values : 0 OK" "$log" || fail "wrong results"
read -r status at0 at1 <"$marks"
[[ $status == ok ]] || fail "the slow-down did not happen: $(cat "$marks")"

before0=$((at0 - start0)) before1=$((at1 - start1)) after0=$((end0 - at0)) after1=$((end1 - at1))
share_before=$((100 * before1 / (before0 + before1)))
share_after=$((100 * after0 / (after0 + after1)))
echo "slow_nic_test: before: rail0 $((before0 >> 20)) MiB, rail1 $((before1 >> 20)) MiB" \
  "(rail1 ${share_before}%); after: rail0 $((after0 >> 20)) MiB, rail1 $((after1 >> 20)) MiB" \
  "(rail0 ${share_after}%)"
((after0 + after1 > 128 << 20)) || fail "only $(((after0 + after1) >> 20)) MiB moved after the slow-down"
((share_before >= MIN_SHARE_BEFORE)) || fail "rail1 carried ${share_before}% before the slow-down"
((share_after >= MIN_FAST_SHARE)) ||
  fail "the fast NIC carried ${share_after}% after the slow-down, want >= ${MIN_FAST_SHARE}%"
# The library's own view at the end (CHORUS_DEBUG=INFO): one line per path (streams on
# each NIC) and direction; rail0's weights summed per direction. tcp only: UCX completes a
# send once its own tcp layer has taken the bytes into a socket buffer, so the rates timed
# from completions at the end of a run are a snapshot that swings (rail0 24-84% in runs
# whose NIC counters gave rail0 80-82%); the counters above are what the NICs carried.
if [[ $transport == tcp ]]; then
  weights=$(grep -Eo "$transport rank [0-9]+ -> [0-9]+ path [0-9]+ \(rail0:[0-9]+\): .*weight [0-9]+%" "$log" |
    sed -E "s/^$transport rank ([0-9]+) -> ([0-9]+) .*weight ([0-9]+)%\$/\1->\2 \3/" |
    awk '{ w[$1] += $2 } END { for (d in w) print d, w[d] }')
  [[ $(wc -l <<<"$weights") == 2 ]] || fail "no striping report for both directions: '$weights'"
  while read -r direction w; do
    echo "slow_nic_test: rank $direction: rail0's final weight ${w}%"
    ((w >= MIN_FAST_WEIGHT)) || fail "rank $direction gives rail0 ${w}%, want >= ${MIN_FAST_WEIGHT}%"
  done <<<"$weights"
fi
echo "slow_nic_test: passed ($transport)"
