#!/bin/sh
# One node of two_nodes.sh, run inside its qemu guest (cwd /mnt, the guest's own writable
# share; /mnt/common is written by both guests). /mnt/env sets NODE (0 or 1), BUILD, SRC.
# Rail i is this guest's NIC with MAC 52:54:00:80:0i:0<node>, 10.80.i.<node+1>/24, and
# rxe<i> on it. Ranks 2*NODE and 2*NODE+1 run here (shm between them, CHORUS_NET=ib to the
# other node); rank 0 (node 0) hosts the store on 10.80.0.1. Parts, in step on both nodes:
#   allreduce  a fixed sample (every 7th) of --quick's all-reduce cases: every type and
#              op, in and out of place, checked element by element on every rank; rxe0;
#   stripe     chorus-perf all-reduce (checked results) with CHORUS_IB_HCA=rxe0,rxe1 and 4
#              QPs per connection: both rxe devices and both NICs must carry the traffic
#              (hw_counters and the NICs' byte counters, before and after), and the
#              striping scheduler's per-QP counters (ChannelStats, logged at INFO as each
#              channel closes) must give each rail at least a hundredth of the bytes sent
#              (shares follow measured rates: timing, not a balance check);
#   rndv       chorus-perf sendrecv of 1 MiB on registered buffers (-R 1, checked) over
#              both rails with a 64 KiB rendezvous threshold: the bytes written one-sided
#              (ChannelStats' `direct`) must cover the transfers and, on every channel
#              that wrote any, be spread over both rails;
#   rails      (on demand: PARTS=rails) one-sided reads over both rails, one slowed: chorus-perf all-reduce
#              peer_twoshot on registered buffers (-R 1, checked), every rank over ib
#              (CHORUS_TRANSPORT=ib: one-sided reads need one transport to every peer)
#              with rail 1's NIC slowed to 200 kbit/s (tc netem) on both nodes: the
#              results must be right, the bytes read (ChannelStats' `read`) must cover
#              what two-shot reads and use both rails, and on the channels to the other
#              node the scheduler must have read at least 2x as much over rxe0 as rxe1 (unslowed: 1.3x);
#   kill       node 1 SIGKILLs rank 3 in the middle of an all-reduce loop: every other rank
#              must exit with an error naming rank 3 within DETECT_S seconds;
#   cutoff     (last: the link stays cut) the host cuts node 1 off in the middle of an
#              all-reduce loop (chorus_fault_trial --only allReduce, results checked): rank
#              0 marks its call 3 in the common share (cutoff.running), two_nodes.sh then
#              takes node 1's taps off both rails' bridges (frames vanish; no link goes down,
#              nothing errs at once) and says so (cutoff.cut). Keepalive off, CHORUS_TIMEOUT
#              CUT_TIMEOUT s: only the stall's probes over verbs (a probe QP's zero-length
#              RDMA WRITEs) can tell a silent host. Every rank on both nodes must report an
#              error within CUT_S s, naming the collective, its sequence number and a rank
#              of the other node that cannot be reached (tests/testbed/cutoff_check.sh, as
#              the netns bed's cut tests), and exit with status 3 (not the guest's kill)
#              within CUT_S s of the cut plus the verbs driver's teardown the ranks logged.
#              Needs the tap link (LINK=tap from two_nodes.sh); skipped on the socket link.
# Prints PASS/FAIL per part; exits non-zero if any failed. Every wait has a deadline.
. /mnt/env
C=/mnt/common
# `rails` is not in the default set: a rail slow enough to tell apart from rail 0 under
# TCG (200 kbit/s) makes it take ~100 s, beyond what CI can spend (PARTS=rails runs it).
PARTS=${PARTS:-allreduce stripe rndv kill cutoff}
DETECT_S=${DETECT_S:-20}
CUT_TIMEOUT=${CUT_TIMEOUT:-20}
CUT_S=${CUT_S:-$((CUT_TIMEOUT + 15))}
set -f
status=0
me=$((NODE + 1))
other=$((2 - NODE))
hostname "chorus-node$NODE"
ip link set lo up

nic_of() {  # nic_of RAIL: the interface holding this node's MAC of that rail
  for d in $(ls /sys/class/net); do
    [ "$(cat "/sys/class/net/$d/address")" = "52:54:00:80:0$1:0$NODE" ] && echo "$d" && return 0
  done
  return 1
}
for rail in 0 1; do
  nic=$(nic_of $rail) || { echo "FAIL: no NIC for rail $rail"; ls /sys/class/net; exit 1; }
  eval "NIC$rail=$nic"
  ip addr add "10.80.$rail.$me/24" dev "$nic" && ip link set "$nic" up &&
    rdma link add "rxe$rail" type rxe netdev "$nic" ||
    { echo "FAIL: rail $rail: could not set up $nic / rxe$rail"; exit 1; }
done

wait_for() {  # wait_for SECONDS WHAT COMMAND...: polls COMMAND until it succeeds
  limit=$1; what=$2; shift 2
  end=$(($(date +%s) + limit))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || { echo "FAIL: no $what within $limit s"; return 1; }
    sleep 0.2
  done
}
for rail in 0 1; do
  wait_for 90 "answer from 10.80.$rail.$other (the other node, rail $rail)" \
    busybox ping -c 1 -W 1 "10.80.$rail.$other" || exit 1
done
ibv_devinfo | grep -E 'hca_id|state'

wanted() {
  for pattern in $PARTS; do case "$1" in $pattern) return 0 ;; esac; done
  return 1
}

# barrier NAME: both nodes reached NAME (files in the common share).
barrier() {
  : > "$C/$1.node$NODE"
  wait_for 120 "node $((1 - NODE)) at $1" test -e "$C/$1.node$((1 - NODE))"
}

# ranks PART PORT SECONDS [VAR=VALUE...] COMMAND...: starts this node's two ranks of a
# 4-rank job whose store (rank 0's) listens on 10.80.0.1:PORT; logs in
# $C/PART.rank<r>.log; each is killed after SECONDS. Sets pid0/pid1 (the timeout
# processes of local ranks 0 and 1); collect with reap. The ranks' own deadline
# (CHORUS_TIMEOUT, default 300 s) comes 15 s before the kill, so a rank stuck in a wait
# ends with Chorus's error and diagnosis (what it waits for, on whom) in its log instead
# of a silent SIGKILL; a VAR=VALUE of the part's overrides it.
ranks() {
  part=$1; port=$2; secs=$3; shift 3
  for local in 0 1; do
    r=$((2 * NODE + local))
    timeout -s KILL "$secs" env CHORUS_RANK=$r CHORUS_WORLD_SIZE=4 CHORUS_LOCAL_RANK=$local \
      CHORUS_LOCAL_SIZE=2 CHORUS_ADDR=10.80.0.1 CHORUS_PORT="$port" \
      CHORUS_JOB_SECRET=two-nodes-$part CHORUS_TRANSPORT=auto CHORUS_NET=ib \
      CHORUS_SOCKET_IFNAME="$NIC0" CHORUS_TIMEOUT=$((secs - 15))s "$@" \
      > "$C/$part.rank$r.log" 2>&1 &
    eval "pid$local=$!"
  done
}
reap() {  # reap: waits for both ranks; rc0/rc1 their exit codes
  wait "$pid0"; rc0=$?
  wait "$pid1"; rc1=$?
}
verdict() {  # verdict PART OK SECONDS: prints PASS/FAIL and the ranks' last lines on failure
  if [ "$2" = 1 ]; then
    echo "PASS $1 ($3 s)"
  else
    echo "FAIL $1 ($3 s): rank exits $rc0 $rc1"
    for local in 0 1; do
      echo "--- rank $((2 * NODE + local))"; tail -n 15 "$C/$1.rank$((2 * NODE + local)).log"
    done
    status=1
  fi
}
# alive PID: the process runs (not gone, not a zombie this shell has not reaped yet)
alive() { s=$(cut -d ' ' -f 3 "/proc/$1/stat" 2>/dev/null) && [ "$s" != Z ]; }
elapsed() { awk "BEGIN{printf \"%.1f\", $(date +%s.%N)-$1}"; }

COLL="$BUILD/tests/multiproc/chorus_collectives_test"
PERF="$BUILD/perf/chorus-perf"

if wanted allreduce; then
  barrier allreduce || exit 1
  t=$(date +%s.%N)
  ranks allreduce 29501 150 CHORUS_IB_HCA=rxe0 "$COLL" --quick --only allReduce --every 7 \
    --expect-layout "2 nodes: 0-1 | 2-3"
  reap
  ok=0; [ "$rc0" = 0 ] && [ "$rc1" = 0 ] && ok=1
  verdict allreduce $ok "$(elapsed "$t")"
fi

counters() {  # counters: "rxe0_sent rxe0_rcvd rxe1_sent rxe1_rcvd nic0_tx nic0_rx nic1_tx nic1_rx"
  for d in rxe0 rxe1; do
    h=/sys/class/infiniband/$d/ports/1/hw_counters
    printf '%s %s ' "$(cat $h/sent_pkts)" "$(cat $h/rcvd_pkts)"
  done
  for n in "$NIC0" "$NIC1"; do
    s=/sys/class/net/$n/statistics
    printf '%s %s ' "$(cat $s/tx_bytes)" "$(cat $s/rx_bytes)"
  done
  echo
}

# driver_teardown PART: the longest teardown of the verbs driver this node's ranks logged
# in PART ("closing the ib transport took S s", logged when over 2 s), 0 if none. It is the
# kernel's, and a rank exits only after it: Soft-RoCE took 0-3 s to destroy a rank's QPs
# after a cut in traced runs here, and once, in CI, the exit came 54 s after the error.
driver_teardown() {
  cat "$C/$1.rank$((2 * NODE)).log" "$C/$1.rank$((2 * NODE + 1)).log" |
    sed -n 's/.*closing the ib transport took \([0-9.]*\) s.*/\1/p' |
    awk '$1 > m { m = $1 } END { print m + 0 }'
}

# ib_report LOG...: the striping counters the ranks' ib channels logged as they closed
# ("ib rank 1 -> 2 path 3 (rxe1:qp3): sent N B, received N B, direct N B, ..."), summed:
# "rxe0_sent rxe1_sent rxe0_direct rxe1_direct channels_with_direct ..._on_both_rails
#  rxe0_read rxe1_read".
ib_report() {
  cat "$@" | awk '/ ib rank [0-9]+ -> [0-9]+ path [0-9]+ \(rxe[0-9]+:qp[0-9]+\): sent / {
    for (i = 1; i <= NF; i++) {
      if ($i == "rank") r = $(i + 1)
      if ($i == "->") p = $(i + 1)
      if ($i == "sent") s = $(i + 1)
      if ($i == "direct") d = $(i + 1)
      if ($i == "read") rd = $(i + 1)
      if ($i ~ /^\(rxe[0-9]+:qp/) { rail = $i; sub(/^\(/, "", rail); sub(/:.*/, "", rail) }
    }
    sent[rail] += s; direct[rail] += d; read[rail] += rd; chan[r " " p] = 1
    if (d > 0) used[r " " p " " rail] = 1
  } END {
    with = 0; both = 0
    for (c in chan) {
      a = ((c " rxe0") in used); b = ((c " rxe1") in used)
      if (a || b) with++
      if (a && b) both++
    }
    printf "%d %d %d %d %d %d %d %d\n", sent["rxe0"], sent["rxe1"], direct["rxe0"], direct["rxe1"],
      with, both, read["rxe0"], read["rxe1"]
  }'
}

if wanted stripe; then
  barrier stripe || exit 1
  t=$(date +%s.%N)
  before=$(counters)
  # 256 KiB all-reduce, float sum: 4 QPs per connection of 16 KiB blocks, QPs spread
  # over both devices; -c 1 checks every rank's result (chorus-perf exits non-zero when
  # one is wrong).
  ranks stripe 29502 120 CHORUS_IB_HCA=rxe0,rxe1 CHORUS_IB_QPS_PER_CONNECTION=4 \
    CHORUS_IB_BLOCK=16K CHORUS_DEBUG=INFO "$PERF" -b 256K -e 256K -n 4 -w 1 -c 1 -T 0
  reap
  after=$(counters)
  echo "stripe counters before: $before"
  echo "stripe counters after:  $after"
  # Each rail must have carried traffic: at least 16 packets sent and received on each rxe
  # device, and a block (16 KiB) each way on each NIC (megabytes cross; the shares follow
  # the scheduler's measured rates, a matter of timing, so this is no balance check).
  share=$(echo "$before $after" | awk '{
    ok = 1
    for (i = 1; i <= 4; i++) if ($(i + 8) - $i < 16) ok = 0
    for (i = 5; i <= 8; i++) if ($(i + 8) - $i < 16384) ok = 0
    printf "%d rxe0 +%d/+%d pkts, rxe1 +%d/+%d pkts, nic0 +%d/+%d B, nic1 +%d/+%d B", ok,
      $9-$1, $10-$2, $11-$3, $12-$4, $13-$5, $14-$6, $15-$7, $16-$8 }')
  echo "stripe traffic: ${share#* }"
  # The scheduler's own counters: what this node's channels sent on each rail's QPs.
  set -- $(ib_report "$C/stripe.rank$((2 * NODE)).log" "$C/stripe.rank$((2 * NODE + 1)).log")
  echo "stripe scheduler: sent on rxe0 $1 B, on rxe1 $2 B"
  sched=0
  total=$((${1:-0} + ${2:-0}))
  [ "$total" -gt 0 ] && [ $(($1 * 100)) -ge "$total" ] && [ $(($2 * 100)) -ge "$total" ] && sched=1
  ok=0; [ "$rc0" = 0 ] && [ "$rc1" = 0 ] && [ "${share%% *}" = 1 ] && [ $sched = 1 ] && ok=1
  verdict stripe $ok "$(elapsed "$t")"
fi

if wanted rndv; then
  barrier rndv || exit 1
  t=$(date +%s.%N)
  # Ranks 1 -> 2 and 3 -> 0 cross the nodes (chorus-perf's sendrecv: r -> r + 1): on each
  # node one channel writes 5 x 1 MiB (1 warm-up, 4 timed) one-sided, in 16 KiB pieces.
  ranks rndv 29504 120 CHORUS_IB_HCA=rxe0,rxe1 CHORUS_IB_QPS_PER_CONNECTION=4 \
    CHORUS_IB_BLOCK=16K CHORUS_IB_RNDV_BYTES=64K CHORUS_DEBUG=INFO \
    "$PERF" -t sendrecv -R 1 -b 1M -e 1M -n 4 -w 1 -c 1 -T 0
  reap
  set -- $(ib_report "$C/rndv.rank$((2 * NODE)).log" "$C/rndv.rank$((2 * NODE + 1)).log")
  echo "rndv: one-sided bytes rxe0 $3, rxe1 $4; channels writing one-sided: $5, on both rails: $6"
  ok=0
  [ "$rc0" = 0 ] && [ "$rc1" = 0 ] && [ "${5:-0}" -ge 1 ] && [ "$5" = "$6" ] &&
    [ "$3" -gt 0 ] && [ "$4" -gt 0 ] && [ $(($3 + $4)) -ge $((4 << 20)) ] && ok=1
  verdict rndv $ok "$(elapsed "$t")"
fi

if wanted rails; then
  barrier rails || exit 1
  t=$(date +%s.%N)
  # Rail 1's NIC sends at 200 kbit/s on both nodes (rail 0 moves ~10x that here, TCG).
  # The queue may hold all that QPs have in flight (no drops); CHORUS_IB_TIMEOUT=24
  # (~69 s) keeps rxe from retransmitting what is only queued.
  tc qdisc add dev "$NIC1" root netem rate 200kbit limit 100000 ||
    echo "rails: tc qdisc add failed"
  barrier slowed || exit 1
  # Two-shot reads a quarter of the input from each of the 3 peers (reduce-scatter, into
  # landing buffers) and a quarter of the output (all-gather, straight into the
  # registered output): 1.5 x 64 KiB per rank and run, 2 runs, 2 ranks here: at least
  # 393,216 bytes read by this node's ranks.
  ranks rails 29505 120 CHORUS_TRANSPORT=ib CHORUS_IB_HCA=rxe0,rxe1 \
    CHORUS_IB_QPS_PER_CONNECTION=4 CHORUS_IB_BLOCK=16K CHORUS_IB_TIMEOUT=24 \
    CHORUS_DEBUG=INFO "$PERF" -R 1 -A allreduce:peer_twoshot -b 64K -e 64K -n 1 -w 1 -c 1 -T 0
  reap
  echo "rails: rail 1's NIC$(tc -s qdisc show dev "$NIC1" | grep -m 1 Sent)"
  tc qdisc del dev "$NIC1" root
  logs="$C/rails.rank$((2 * NODE)).log $C/rails.rank$((2 * NODE + 1)).log"
  set -- $(ib_report $logs)
  r0=${7:-0}; r1=${8:-0}
  echo "rails: one-sided bytes read on rxe0 $r0, on rxe1 $r1 (all channels)"
  # Only the channels to the other node cross the NICs (those inside a node stay in rxe).
  far="$((2 * (1 - NODE)))|$((2 * (1 - NODE) + 1))"
  grep -hE " ib rank [0-9]+ -> ($far) path " $logs > "$C/rails.far$NODE.log"
  set -- $(ib_report "$C/rails.far$NODE.log")
  f0=${7:-0}; f1=${8:-0}
  echo "rails: read from the other node on rxe0 $f0, on rxe1 $f1 (rail 1 slowed)"
  ok=0
  [ "$rc0" = 0 ] && [ "$rc1" = 0 ] && [ $((r0 + r1)) -ge 393216 ] && [ "$r1" -gt 0 ] &&
    [ "$f0" -gt 0 ] && [ "$f0" -ge $((2 * f1)) ] && ok=1
  verdict rails $ok "$(elapsed "$t")"
fi

if wanted kill; then
  barrier kill || exit 1
  t=$(date +%s.%N)
  # An all-reduce loop far longer than the test: it ends only by the error.
  ranks kill 29503 120 CHORUS_IB_HCA=rxe0 "$PERF" -b 64K -e 64K -n 1000000 -w 0 -c 0 -T 0
  ok=1
  if [ "$NODE" = 1 ]; then
    # Rank 0 prints the device table once the communicator is up; then everyone loops.
    if wait_for 90 "communicator (rank 0's device table)" grep -q 'Rank  3' "$C/kill.rank0.log"; then
      sleep 2
      # rank 3: the child of its timeout process (no pkill: procps may be absent)
      victim=$(cat "/proc/$pid1/task/$pid1/children")
      [ -n "$victim" ] && kill -KILL $victim && : > "$C/kill.killed"
    else
      ok=0
    fi
  else
    wait_for 100 "kill of rank 3 by node 1" test -e "$C/kill.killed" || ok=0
  fi
  seen=$(date +%s.%N)
  reap
  took=$(elapsed "$seen")
  # Survivors: a non-zero exit, within DETECT_S of the kill, with an error naming rank 3.
  survivors="0 1"; [ "$NODE" = 1 ] && survivors=0
  for local in $survivors; do
    r=$((2 * NODE + local)); eval "rc=\$rc$local"
    if [ "$rc" = 0 ] || [ "$rc" = 137 ] || ! grep -q 'rank 3' "$C/kill.rank$r.log"; then
      echo "kill: rank $r exited $rc without naming rank 3"; ok=0
    fi
  done
  # The exit comes after the verbs driver's teardown (driver_teardown): the limit grows by it.
  driver=$(driver_teardown kill)
  if awk "BEGIN{exit !($took > $DETECT_S + $driver)}"; then
    echo "kill: the survivors took $took s (limit $DETECT_S s + the driver's $driver s)"; ok=0
  fi
  echo "kill: survivors on node $NODE exited $took s after the kill; rank $((2 * NODE)) said:"
  grep -m 1 'rank 3' "$C/kill.rank$((2 * NODE)).log"
  verdict kill $ok "$(elapsed "$t")"
fi
if wanted cutoff && [ "${LINK:-}" != tap ]; then
  echo "SKIP cutoff: the host cuts only the tap link (this is ${LINK:-unknown})"
elif wanted cutoff; then
  barrier cutoff || exit 1
  t=$(date +%s.%N)
  # A loop far longer than the test (checked all-reduces, both rails): it ends only by the
  # error. Rank 0 marks call 3; the host cuts node 1 off when it sees the mark.
  ranks cutoff 29506 120 CHORUS_IB_HCA=rxe0,rxe1 CHORUS_IB_QPS_PER_CONNECTION=2 \
    CHORUS_KEEPALIVE=0s CHORUS_TIMEOUT="${CUT_TIMEOUT}s" "$BUILD/tests/fault/chorus_fault_trial" \
    --fault mark --mark "$C/cutoff.running" --victim 0 --at 3 --calls 1000000 --seed 5 \
    --only allReduce
  # Until the host has cut node 1 off, or both ranks ended before (a failed set-up).
  ok=1
  end=$(($(date +%s) + 100))
  until [ -e "$C/cutoff.cut" ]; do
    if ! alive "$pid0" && ! alive "$pid1" || [ "$(date +%s)" -ge "$end" ]; then
      echo "FAIL: no cut (the host's cutoff.cut) while the ranks ran, within 100 s"; ok=0; break
    fi
    sleep 0.2
  done
  cut=$(date +%s.%N)
  echo "cutoff: the cut seen at $(elapsed "$t") s"
  reap
  took=$(elapsed "$cut")
  other="2|3"; [ "$NODE" = 1 ] && other="0|1"
  for local in 0 1; do
    r=$((2 * NODE + local)); eval "rc=\$rc$local"
    line=$(grep -m 1 "^rank $r: ERROR after" "$C/cutoff.rank$r.log")
    echo "cutoff: rank $r exited $rc: $(echo "$line" | cut -c1-700)"
    if [ "$rc" != 3 ]; then
      echo "cutoff: rank $r exited $rc, not 3 (an error of Chorus's; 137: killed at the limit)"
      ok=0
    fi
    why=$(bash "$SRC/tests/testbed/cutoff_check.sh" "$r" "$other" $((CUT_S * 1000)) "$line") ||
      { echo "cutoff: $why"; ok=0; }
  done
  # The exit's limit grows by the verbs driver's teardown (driver_teardown); the error
  # itself must still come within CUT_S (cutoff_check.sh above).
  driver=$(driver_teardown cutoff)
  if awk "BEGIN{exit !($took > $CUT_S + $driver)}"; then
    echo "cutoff: the ranks took $took s after the cut (limit $CUT_S s + the driver's $driver s)"
    ok=0
  fi
  echo "cutoff: both ranks exited $took s after the cut was seen (the verbs driver's teardown: $driver s)"
  verdict cutoff $ok "$(elapsed "$t")"
fi
# Retransmissions and errors on the rails (rxe's counters), for the record.
for d in rxe0 rxe1; do
  h=/sys/class/infiniband/$d/ports/1/hw_counters
  echo "$d: $(for f in duplicate_request out_of_seq_request rcvd_seq_err completer_retry_err retry_exceeded_err; do
    printf '%s=%s ' $f "$(cat $h/$f 2>/dev/null)"; done)"
done
exit $status
