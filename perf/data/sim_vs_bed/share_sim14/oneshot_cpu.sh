#!/usr/bin/env bash
# The host's CPU during 3x2 oneshot and ring at 64 MiB (/proc/stat over the chorus-perf run,
# probe included): busy, softirq and idle shares of both cores.
# Under the lock and chrt:  flock /work/measure.lock chrt -f 1 oneshot_cpu.sh
set -u
d=$(cd "$(dirname "$0")" && pwd)/oneshot
cd /work/wt/sim14
bed=tests/testbed/netns_bed.sh
cpu() { awk '/^cpu / { print $2 + $3, $4, $5 + $6, $7, $8 }' /proc/stat; }  # user+nice sys idle+iowait irq softirq
for algo in oneshot ring; do
  id=$($bed up 3 1 1000mbit) || exit 1
  o=$d/cpu_3x2_$algo
  uptime >"$o.uptime"
  a=$(cpu); t0=$(date +%s.%N)
  $bed run -b "$id" -n 2 -t 300 -- build/perf/chorus-perf -t allreduce -A $algo -b 64M -e 64M \
    -n 3 -w 1 -T 0 >"$o.log" 2>&1
  b=$(cpu); t1=$(date +%s.%N)
  uptime >>"$o.uptime"
  echo "$a $b $t0 $t1" | awk '{ n = 5; tot = 0; for (i = 1; i <= n; ++i) { d[i] = $(i + n) - $i; tot += d[i] }
    printf "wall %.1f s; user %.2f sys %.2f idle %.2f irq %.2f softirq %.2f of both cores\n", $12 - $11, d[1] / tot, d[2] / tot, d[3] / tot, d[4] / tot, d[5] / tot }' >"$o.txt"
  $bed down "$id"
done
