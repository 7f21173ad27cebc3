#!/usr/bin/env bash
# Is 64 KiB's miss on 3x2 the run's first size? The same -A each run from 16 KiB (64 KiB
# second), at 1 Gbit/s and with no shaper (-r 0), this branch's build, chrt -f 1, the lock:
#   not_first.sh TAG
set -u
d=$(cd "$(dirname "$0")" && pwd) src=/work/wt/sim13 tag=${1:-1}
for rate in 1000mbit 0; do
  uptime >>"$d/not_first.uptime"
  flock /work/measure.lock chrt -f 1 $src/tests/testbed/netns_bed.sh run -k 3 -m 1 -r $rate -n 2 -t 300 \
    -e CHORUS_TUNE_PROBE=1 -e CHORUS_DEBUG=INFO -- \
    $src/build/perf/chorus-perf -t allreduce -A each -b 16K -e 256K -f 4 -K 1 -n 2 -w 1 -T 200 \
    >"$d/not_first_3x2_${rate}_$tag.log" 2>&1
done
uptime >>"$d/not_first.uptime"
