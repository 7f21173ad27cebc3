#!/usr/bin/env bash
# chorus-sim --timeline: the replayed steps it writes are a consistent trace (each step
# once, behind the step it waits for, receives behind their sends, spans ending at the
# CSV's time; timeline_check.py), and they are the steps the engine runs: the same
# algorithm and size run by chorus-perf on 4 ranks with CHORUS_TRACE_STEPS must show a call
# with exactly those steps on every rank (and no sequence number twice: the tuning probe's
# calls are not in the user's trace).
#   timeline_test.sh CHORUS_SIM CHORUS_RUN CHORUS_PERF TIMELINE_CHECK_PY
set -euo pipefail
sim=$1 run=$2 perf=$3 check=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$sim" --fabric uniform --gpus 4 --full -A ring,rd,twoshot -b 64K -e 1M -f 16 \
  --csv "$tmp/sim.csv" --timeline "$tmp/sim" >"$tmp/sim.txt"
status=0
for a in ring rd twoshot; do
  CHORUS_TRACE_STEPS="$tmp/engine.$a" "$run" -n 4 --timeout 120 "$perf" -b 64K -e 1M -f 16 \
    -n 1 -w 0 -c 0 -T 0 -A "allreduce:$a" >"$tmp/perf.$a.txt" 2>&1 ||
    { echo "FAIL: chorus-perf -A allreduce:$a"; tail -5 "$tmp/perf.$a.txt"; exit 1; }
  for bytes in 65536 1048576; do
    [ -s "$tmp/sim.$a.$bytes.json" ] || { echo "FAIL: no timeline for $a at $bytes B"; exit 1; }
    /usr/bin/python3 "$check" "$tmp/sim.$a.$bytes.json" "$tmp/sim.csv" $a $bytes 4 \
      "$tmp/engine.$a" || status=1
  done
done
exit $status
