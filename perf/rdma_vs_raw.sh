#!/bin/sh
# chorus-perf over the verbs transport next to the raw verbs ceiling (perftest's
# ib_write_bw), on the same Soft-RoCE device in the same qemu guest.
#   perf/rdma_vs_raw.sh [BUILD]          on the host: boots the guest (tests/rdma/softroce.sh)
#   perf/rdma_vs_raw.sh --guest BUILD    inside the guest (what the first form runs there)
# Env: BYTES (message size, default 4194304), ITERS (default 10).
# Soft-RoCE under TCG emulation is a correctness bed: absolute numbers are tiny; the
# ratio chorus/raw is what this measures. Needs perftest on the host (apt-get install perftest).
set -u
BYTES=${BYTES:-4194304}
ITERS=${ITERS:-10}
if [ "${1:-}" != --guest ]; then
  here=$(cd "$(dirname "$0")/.." && pwd)
  build=$(cd "${1:-$here/build}" && pwd)
  command -v ib_write_bw >/dev/null || { echo "rdma_vs_raw: install perftest first" >&2; exit 2; }
  exec bash "$here/tests/rdma/softroce.sh" "$here/tests/rdma/guest_suite.sh" \
    BUILD="$build" SRC="$here" SUITE=perf BYTES="$BYTES" ITERS="$ITERS"
fi
BUILD=$2
ADDR=10.77.0.1
raw() {  # raw LABEL ARGS...: one ib_write_bw pair; prints its average in MB/s (1e6 B/s)
  label=$1; shift
  ib_write_bw -d rxe0 -x 1 -F -s "$BYTES" -n "$ITERS" "$@" > /tmp/raw-server.log 2>&1 &
  sleep 1
  timeout 300 ib_write_bw -d rxe0 -x 1 -F -s "$BYTES" -n "$ITERS" "$@" $ADDR \
    > /tmp/raw-client.log 2>&1
  wait
  # row: #bytes #iterations BW-peak BW-average MsgRate; perftest's MB is 2^20 bytes
  mib=$(awk -v b="$BYTES" '$1 == b && NF >= 4 {print $4}' /tmp/raw-client.log | tail -n1)
  [ -n "$mib" ] || { cat /tmp/raw-client.log /tmp/raw-server.log; echo "raw $label failed"; return 1; }
  awk -v m="$mib" -v l="$label" 'BEGIN{printf "raw ib_write_bw %-30s %8.2f MB/s\n", l, m * 1.048576}'
}
chorus() {  # chorus LABEL COLLECTIVE: 2 ranks; MB/s = bytes / out-of-place time (us), = busbw
  label=$1; coll=$2
  "$BUILD/tools/chorus-run" -n 2 --timeout 600 "$BUILD/perf/chorus-perf" -t "$coll" \
    -b "$BYTES" -e "$BYTES" -n "$ITERS" -w 2 -c 1 -T 0 > /tmp/chorus-perf.log 2>&1 ||
    { cat /tmp/chorus-perf.log; echo "chorus-perf $label failed"; return 1; }
  # table row: size count type redop root time algbw busbw #wrong (out-of-place first)
  awk -v b="$BYTES" -v l="$label" '$1 == b {printf "chorus-perf %-34s %8.2f MB/s (%s us)\n", l, b / $6, $6; exit}' \
    /tmp/chorus-perf.log
}
echo "message size $BYTES B, $ITERS iterations, rxe0 in a TCG guest"
echo "(broadcast on 2 ranks is one direction, like plain ib_write_bw; sendrecv sends and"
echo " receives at once: its MB/s is per direction, -b reports both directions summed)"
status=0
raw "one direction" || status=1
raw "both directions (-b)" -b || status=1
chorus "broadcast, 2 ranks (one direction)" broadcast || status=1
chorus "sendrecv, 2 ranks" sendrecv || status=1
CHORUS_IB_QPS_PER_CONNECTION=4 chorus "sendrecv, 2 ranks, 4 QPs" sendrecv || status=1
chorus "allreduce, 2 ranks" allreduce || status=1
exit $status
