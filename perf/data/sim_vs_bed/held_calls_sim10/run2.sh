#!/usr/bin/env bash
# NAME MODE(base|qa|nocork|qanocork) : up a 3x2 bed, tweak, run hier_rd 256K 1 s under chrt (caller), nstat per node, down
set -u
name=$1 mode=$2
d=/tmp/sim10x/$name; rm -rf $d; mkdir -p $d
perfbin=${PERFBIN:-/work/main/build/perf/chorus-perf}
cd /work/wt/sim10
bed=tests/testbed/netns_bed.sh
id=$($bed up 3 1 ${RATE:-1000mbit}) || exit 1
trap "$bed down $id" EXIT
for n in 0 1 2; do
  ns=${id}n$n
  if [[ $mode == qa* ]]; then
    ip -n $ns route change 10.77.0.0/24 dev rail0 proto kernel scope link src 10.77.0.$((n+1)) quickack 1
    ip -n $ns route change local 10.77.0.$((n+1)) dev rail0 table local proto kernel scope host src 10.77.0.$((n+1)) quickack 1
  fi
  [[ $mode == *ssai* ]] && ip netns exec $ns sysctl -q net.ipv4.tcp_slow_start_after_idle=0
  [[ $mode == *nocork ]] && ip netns exec $ns sysctl -q net.ipv4.tcp_autocorking=0
  ip -n $ns route show table all | grep 10.77 >> $d/routes
  ip netns exec $ns nstat -n >/dev/null   # reset the history
done
uptime > $d/uptime
$bed run -b $id -n 2 -t 120 -e CHORUS_TUNE_PROBE=1 -e CHORUS_DEBUG=INFO -e CHORUS_TRACE_STEPS=$d/t ${XENV:-} -- \
  $perfbin -t allreduce -A ${ALGO:-hier_rd} -b 256K -e 256K -f 1 -K 1 -n 2 -w 1 -T ${MS:-1000} > $d/log 2>&1
echo rc=$? >> $d/log
uptime >> $d/uptime
for n in 0 1 2; do echo "# node $n"; ip netns exec ${id}n$n nstat -a 2>/dev/null | grep -E "DelayedACK|Retrans|Timeouts|Probe|Quick|Pure|TCPAutoCork|Window|ZeroWindow|Backlog|Prune|OFO"; done > $d/nstat
