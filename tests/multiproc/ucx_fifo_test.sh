#!/bin/sh
# ucx_fifo_test.sh CHORUS_RUN COLLECTIVES_TEST: the UCX transport (two endpoints per
# peer) with both ranks and every thread they start under SCHED_FIFO on one CPU. Threads
# inherit the policy, so any of them that loops without blocking or yielding keeps the
# others (UCX's async thread, the engine) off the CPU for good: until the kernel's
# real-time throttle gives way, that made the start of a 2-rank run take 20 s here, and on
# two CPUs it hung. Passes only if the np=2 run of the --quick collective suite (every type
# and op, exact inputs, checked by each rank) exits 0 within LIMIT seconds (about 2 s
# today). A hung run is killed by pid from this unpinned, normal-priority script: the
# binaries run under names of their own so that /proc/PID/comm finds them (never read a
# spinning process's cmdline: that waits on its mmap lock). Skips where SCHED_FIFO is
# not allowed or only one CPU is.
run=$1
coll=$2
limit=${LIMIT:-15}  # the spinning thread made start-up alone take 20 s
chrt -f 1 true 2>/dev/null || { echo "ucx_fifo_test.sh: SKIP: SCHED_FIFO not allowed"; exit 77; }
cpus=$(taskset -cp $$ | sed 's/.*: //')
cpu=$(echo "$cpus" | tr ',-' '\n\n' | tail -n 1)
[ "$(nproc)" -ge 2 ] || { echo "ucx_fifo_test.sh: SKIP: needs 2 CPUs (one stays free)"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp "$run" "$dir/fifotest-run"
cp "$coll" "$dir/fifotest-coll"
(
  CHORUS_UCX_PATHS=2 taskset -c "$cpu" chrt -f 1 "$dir/fifotest-run" -n 2 --timeout 60 \
    "$dir/fifotest-coll" --transport ucx --quick >"$dir/out" 2>&1
  echo $? >"$dir/rc"
) &
ticks=0
while [ ! -s "$dir/rc" ] && [ "$ticks" -lt $((limit * 10)) ]; do
  sleep 0.1
  ticks=$((ticks + 1))
done
if [ ! -s "$dir/rc" ]; then
  for p in /proc/[0-9]*; do
    case "$(cat "$p/comm" 2>/dev/null)" in fifotest-run | fifotest-coll) kill -9 "${p#/proc/}" 2>/dev/null ;; esac
  done
  wait
  tail -n 5 "$dir/out"
  echo "ucx_fifo_test.sh: FAIL: not done after ${limit} s under SCHED_FIFO on CPU $cpu (killed)"
  exit 1
fi
wait
tail -n 3 "$dir/out"
rc=$(cat "$dir/rc")
if [ "$rc" -ne 0 ]; then
  echo "ucx_fifo_test.sh: FAIL: chorus-run exited $rc"
  exit 1
fi
echo "ucx_fifo_test.sh: passed in $(awk "BEGIN { print $ticks / 10 }") s"
