#!/bin/sh
# perf_table_test.sh CHORUS_RUN CHORUS_PERF: chorus-perf's table for every collective at 3
# ranks (8 B to 256 KiB, checked), written as JSON (-J) and checked by perf_table_check.py
# against nccl-tests' conventions: algbw, busbw and its factor per collective, the average.
run=$1
perf=$2
here=$(dirname "$0")
work=$(mktemp -d /tmp/chorus-perf-table.XXXXXX)
trap 'rm -rf "$work"' EXIT
for coll in allreduce allgather reducescatter alltoall broadcast reduce sendrecv; do
  "$run" -n 3 --timeout 120 "$perf" -t $coll -b 8 -e 256K -f 8 -c 1 -n 2 -w 1 -T 0 \
    -J "$work/$coll.json" >"$work/$coll.log" 2>&1 ||
    { cat "$work/$coll.log"; echo "FAIL: chorus-perf -t $coll"; exit 1; }
  python3 "$here/perf_table_check.py" 3 $coll "$work/$coll.json" ||
    { cat "$work/$coll.log"; exit 1; }
done
