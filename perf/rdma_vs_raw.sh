#!/bin/sh
# chorus-perf over the verbs transport next to the raw verbs ceiling (perftest's
# ib_write_bw), on the same Soft-RoCE device in the same qemu guest.
#   perf/rdma_vs_raw.sh [BUILD [BUILD_B]]  on the host: boots the guest (tests/rdma/softroce.sh)
#   perf/rdma_vs_raw.sh --guest BUILD      inside the guest (what the first form runs there)
# With BUILD_B (e.g. the build before a change, then the one after), every Chorus
# measurement runs on both builds back to back within each round (A, then B), and each
# row gives B's median and B / A as well.
# Env: BYTES (message size, default 4194304), ITERS (default 10), ROUNDS (default 3): every
# measurement runs ROUNDS times, the raw and Chorus runs alternating round by round; the
# table gives medians and each Chorus line's ratio to its raw reference (chorus-perf's
# out-of-place columns; the all-reduce rows also give its in-place ones, KEY.ip). RUN_TIMEOUT
# (default 300 s) bounds each chorus-perf run. KEYS (shell patterns separated by spaces,
# default *): only the measurements whose key (the table's: raw.both, sendrecv.R1,
# allreduce.R1.ring, ...) matches one run. With BUILD_B, odd rounds run A first and even
# rounds B first, so neither build always runs right after the raw reference.
# Soft-RoCE under TCG emulation is a correctness bed: absolute numbers are tiny; the
# ratio chorus/raw is what this measures. Needs perftest on the host (apt-get install perftest).
set -u
BYTES=${BYTES:-4194304}
ITERS=${ITERS:-10}
if [ "${1:-}" != --guest ]; then
  here=$(cd "$(dirname "$0")/.." && pwd)
  build=$(cd "${1:-$here/build}" && pwd)
  build_b=""
  if [ -n "${2:-}" ]; then build_b=$(cd "$2" && pwd); fi
  command -v ib_write_bw >/dev/null || { echo "rdma_vs_raw: install perftest first" >&2; exit 2; }
  exec bash "$here/tests/rdma/softroce.sh" "$here/tests/rdma/guest_suite.sh" \
    BUILD="$build" BUILD_B="$build_b" SRC="$here" SUITE=perf BYTES="$BYTES" ITERS="$ITERS" \
    ROUNDS="${ROUNDS:-3}" RUN_TIMEOUT="${RUN_TIMEOUT:-300}" KEYS="${KEYS:-*}"
fi
set -f  # KEYS holds patterns, not file names
BUILD=$2
BUILD_B=${BUILD_B:-}
ROUNDS=${ROUNDS:-3}
ADDR=10.77.0.1
OUT=/tmp/rdma_vs_raw; rm -rf "$OUT"; mkdir -p "$OUT"
wanted() {  # wanted KEY: KEY matches one of KEYS' patterns
  for pattern in ${KEYS:-*}; do case "$1" in $pattern) return 0 ;; esac; done
  return 1
}
raw() {  # raw KEY ARGS...: one ib_write_bw pair; appends its average in MB/s (1e6 B/s)
  key=$1; shift
  wanted "$key" || return 0
  # the server too has a limit: a client that gave up must not leave `wait` hanging
  timeout 320 ib_write_bw -d rxe0 -x 1 -F -s "$BYTES" -n "$ITERS" "$@" > /tmp/raw-server.log 2>&1 &
  sleep 1
  timeout 300 ib_write_bw -d rxe0 -x 1 -F -s "$BYTES" -n "$ITERS" "$@" $ADDR \
    > /tmp/raw-client.log 2>&1
  wait
  # row: #bytes #iterations BW-peak BW-average MsgRate; perftest's MB is 2^20 bytes
  mib=$(awk -v b="$BYTES" '$1 == b && NF >= 4 {print $4}' /tmp/raw-client.log | tail -n1)
  [ -n "$mib" ] || { cat /tmp/raw-client.log /tmp/raw-server.log; echo "raw $key failed"; return 1; }
  awk -v m="$mib" 'BEGIN{printf "%.3f\n", m * 1.048576}' | tee -a "$OUT/$key" | sed "s/^/  $key: /"
}
chorus() {  # chorus KEY COLLECTIVE [chorus-perf args]: on BUILD, then (as KEY.b) on BUILD_B
  k=$1; shift
  wanted "$k" || return 0
  if [ -n "$BUILD_B" ] && [ $((r % 2)) = 0 ]; then  # even rounds: B first
    chorus_on "$BUILD_B" "$k.b" "$@" || return 1
    chorus_on "$BUILD" "$k" "$@"
    return
  fi
  chorus_on "$BUILD" "$k" "$@" || return 1
  [ -z "$BUILD_B" ] || chorus_on "$BUILD_B" "$k.b" "$@"
}
chorus_on() {  # chorus_on BUILD KEY COLLECTIVE [chorus-perf args]: 2 ranks; appends MB/s = bytes / time
  build=$1; key=$2; coll=$3; shift 3
  "$build/tools/chorus-run" -n 2 --timeout "${RUN_TIMEOUT:-300}" "$build/perf/chorus-perf" -t "$coll" \
    -b "$BYTES" -e "$BYTES" -n "$ITERS" -w 2 -c 1 -T 0 "$@" > /tmp/chorus-perf.log 2>&1 ||
    { cat /tmp/chorus-perf.log; echo "chorus-perf $key failed"; return 1; }
  # table row: size count type redop root time algbw busbw #wrong (out-of-place first);
  # bytes/time is busbw for all of these at 2 ranks (all-reduce: 2(n-1)/n = 1)
  v=$(awk -v b="$BYTES" '$1 == b {printf "%.3f", b / $6; exit}' /tmp/chorus-perf.log)
  [ -n "$v" ] || { cat /tmp/chorus-perf.log; echo "chorus-perf $key: no row"; return 1; }
  echo "$v" >> "$OUT/$key"
  # the same row's in-place columns (time: $10) go to KEY.ip (B's: KEY.ip.b)
  case "$key" in *.b) ipkey="${key%.b}.ip.b" ;; *) ipkey="$key.ip" ;; esac
  vi=$(awk -v b="$BYTES" '$1 == b && NF >= 13 {printf "%.3f", b / $10; exit}' /tmp/chorus-perf.log)
  [ -z "$vi" ] || echo "$vi" >> "$OUT/$ipkey"
  echo "  $key: $v (in place: ${vi:-none})"
}
median() { sort -n "$OUT/$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
row() {  # row KEY LABEL [REFERENCE_KEY DIVISOR]: median MB/s, all runs, ratio to the reference
  [ -s "$OUT/$1" ] || return 0
  m=$(median "$1")
  runs=$(tr '\n' ' ' < "$OUT/$1")
  if [ -n "${3:-}" ]; then
    ref=$(awk -v r="$(median "$3")" -v d="$4" 'BEGIN{print r / d}')
    ratio=$(awk -v m="$m" -v r="$ref" 'BEGIN{printf "%.2f", m / r}')
    printf "%-44s %9.2f MB/s  %.2fx of %s / %s  [%s]\n" "$2" "$m" "$ratio" "$3" "$4" "$runs"
    if [ -s "$OUT/$1.b" ]; then
      mb=$(median "$1.b")
      printf "%-44s %9.2f MB/s  %.2fx of %s / %s, %.2fx of A  [%s]\n" "  B: $BUILD_B" "$mb" \
        "$(awk -v m="$mb" -v r="$ref" 'BEGIN{print m / r}')" "$3" "$4" \
        "$(awk -v m="$mb" -v a="$m" 'BEGIN{print m / a}')" "$(tr '\n' ' ' < "$OUT/$1.b")"
    fi
  else
    printf "%-44s %9.2f MB/s  [%s]\n" "$2" "$m" "$runs"
  fi
}
echo "message size $BYTES B, $ITERS iterations, $ROUNDS alternating rounds, rxe0 in a TCG guest"
echo "A: $BUILD${BUILD_B:+; B: $BUILD_B (each Chorus run on A, then on B)}"
echo "(sendrecv sends and receives at once: its MB/s is per direction, compared with half of"
echo " ib_write_bw -b, which sums both directions; so is the all-reduce's busbw at 2 ranks:"
echo " each rank sends and receives S bytes at once, so the bound is the per-direction rate"
echo " when both directions run; broadcast moves one way and is compared with one direction)"
status=0
r=1
while [ $r -le "$ROUNDS" ]; do
  raw raw.one || status=1
  # (A/B runs leave out what no change here touches, to fit a measurement slot)
  [ -n "$BUILD_B" ] || chorus sendrecv sendrecv || status=1
  chorus sendrecv.R1 sendrecv -R 1 || status=1
  # -R 3: registered sources into unregistered destinations (the receiver's bounce buffer)
  chorus sendrecv.R3 sendrecv -R 3 || status=1
  raw raw.both -b || status=1
  chorus allreduce allreduce || status=1
  chorus allreduce.R1 allreduce -R 1 || status=1
  chorus allreduce.R2 allreduce -R 2 || status=1
  [ -n "$BUILD_B" ] || chorus allreduce.R1.oneshot allreduce -R 1 -A allreduce:peer_oneshot || status=1
  chorus allreduce.R1.twoshot allreduce -R 1 -A allreduce:peer_twoshot || status=1
  chorus allreduce.R1.push allreduce -R 1 -A allreduce:peer_push || status=1
  chorus allreduce.R1.ring allreduce -R 1 -A allreduce:ring || status=1
  [ -n "$BUILD_B" ] || chorus broadcast broadcast || status=1
  r=$((r + 1))
done
echo "medians over $ROUNDS rounds:"
row raw.one "raw ib_write_bw, one direction"
row raw.both "raw ib_write_bw -b, both directions summed"
row broadcast "chorus broadcast (one direction)" raw.one 1
row sendrecv "chorus sendrecv" raw.both 2
row sendrecv.R1 "chorus sendrecv, registered (-R 1, rendezvous)" raw.both 2
row sendrecv.R3 "chorus sendrecv, registered source, plain destination (-R 3)" raw.both 2
row allreduce "chorus allreduce, copy path" raw.both 2
row allreduce.ip "  in place" raw.both 2
row allreduce.R1 "chorus allreduce -R 1 (registered), tuner's pick" raw.both 2
row allreduce.R1.ip "  in place (bounce buffer)" raw.both 2
row allreduce.R2 "chorus allreduce -R 2 (memAlloc), tuner's pick" raw.both 2
row allreduce.R2.ip "  in place" raw.both 2
row allreduce.R1.oneshot "chorus allreduce -R 1, peer_oneshot (READ)" raw.both 2
row allreduce.R1.twoshot "chorus allreduce -R 1, peer_twoshot (READ)" raw.both 2
row allreduce.R1.push "chorus allreduce -R 1, peer_push (READ, then WRITE)" raw.both 2
row allreduce.R1.ring "chorus allreduce -R 1, ring (rendezvous)" raw.both 2
row allreduce.R1.ring.ip "  in place (bounce buffer)" raw.both 2
exit $status
