#!/usr/bin/env bash
# chorus-sim against the netns test bed: every all-reduce algorithm, 64 KiB..64 MiB, on
# K nodes x N ranks (default layouts 2x2 and 3x2) joined by one NIC each at RATE Mbit/s.
# Measures with `chorus-perf -A each` in the bed, simulates the same with chorus-sim on a
# fabric file describing the bed, and prints per size and algorithm measured and simulated
# busbw, their ratio, and per size the measured winner, the simulated winner and the
# tuner's pick in the bed. Needs root.
#   [MIN_MS=200] [PERF=build/perf/chorus-perf] [BEGIN=64K] [END=64M] [SENDS_HOLD_A_CORE=0] [CORE_POOL=0|1|2] [POOL_WAITERS_SPIN=0|1] [POOL_BOUND_CORES=0|1] perf/sim_vs_bed.sh [RATE_MBIT=1000] [LAYOUTS="2x2 3x2"] [ROUNDS=1] [OUT=sim_vs_bed]
#   [SIM=chorus-sim] perf/sim_vs_bed.sh --compare DIR [LAYOUTS]
# --compare measures nothing: it simulates DIR/bed_KxN.fabric against the measured table
# DIR/bed_KxN.txt recorded earlier (perf/data/sim_vs_bed/ holds one; ctest's
# sim_bed_agreement checks it), rebuilding the fabric from DIR/bed_KxN.log when present.
# Bed model (fabric file written to OUT/bed_KxN.fabric) calibrated in the same run, not
# fitted to the points: the communicator's tuning probe (CHORUS_TUNE_PROBE=1: every pair
# ping-pongs at once, so the figures carry the load of ranks sharing the cores) measures
# the link within a node (TCP over loopback) and between nodes (TCP over the veth that tc
# limits to RATE): latency, per-message overhead, rate; and the local reduce and copy
# rates. The fabric takes those figures as its NVLink and NIC (efficiency 1: the probe
# measured payload; the NIC's line rate less TCP's per-packet framing as tc counts it,
# 1448 of 1514 bytes), and the bed's tuner decides from the same figures. The host's cores
# are shared by every rank of every node (host_cores): the probe scales a rank's local
# rates by the call's share (call_share in the log: cores / the machine's K x N ranks; older
# logs: cores / ranks on the node), the fabric gets one core's rates back (divided by that
# share), and the per-message overhead at one core (overhead_share in the log: the share the
# probe measured it at; docs/sim.md, sixteenth session), and shares the host's cores among all K x N ranks and the
# other tenants' runnable threads (host_load: the load average sampled during the run,
# less the bed's ranks; 0 when the script runs under chrt, whose ranks preempt them). TCP moves every byte through the CPU at both ends (the copy into
# the kernel and out of it), on the same CPU as the rank's reductions: transport_gbps, a
# core's rate for that copy (TRANSPORT_GBPS, default 2.2: fitted once to the recorded
# runs in perf/data/sim_vs_bed/, docs/sim.md), taken at the rank's share of the cores.
set -euo pipefail
cd "$(dirname "$0")/.."
sim=${SIM:-$PWD/build/tools/chorus-sim}
cores=${HOST_CORES:-$(nproc)}

# The bed's fabric from a bed log (rank 0's probe lines): fabric_of LOG K N LAYOUT
fabric_of() {
  local load=${HOST_LOAD:-}
  if [[ -z $load && -s ${1%.log}.load ]]; then  # mean 1-minute load during the run, less the ranks
    load=$(awk -v r=$(($2 * $3)) '{ s += $1; c++ } END { l = s / c - r; printf "%.1f", (l > 0 ? l : 0) }' "${1%.log}.load")
  fi
  awk -v k="$2" -v n="$3" -v layout="$4" -v cores="$cores" -v load="${load:-0}" \
    -v transport="${TRANSPORT_GBPS:-2.2}" -v line="${RATE_MBIT:-1000}" -v holds="${SENDS_HOLD_A_CORE:-0}" \
    -v pool="${CORE_POOL:-0}" -v spin="${POOL_WAITERS_SPIN:-0}" -v bound="${POOL_BOUND_CORES:-0}" '
    /^\[0\].*tuning \(probe\):/ { within = $0 }
    /^\[0\].*tuning between nodes/ { between = $0 }
    function get(line, key,   m) { return match(line, key "=[0-9.e+-]+") ? substr(line, RSTART + length(key) + 1, RLENGTH - length(key) - 1) : "" }
    END {
      if (within == "" || between == "") { print "no tuning probe figures in the log" > "/dev/stderr"; exit 1 }
      # What the probe scaled local rates by: the call'"'"'s share of a core where the log says
      # (call_share: cores / the machine'"'"'s k n ranks), else its node'"'"'s (older builds).
      share = get(within, "call_share"); if (share == "") { share = cores / n; if (share > 1) share = 1 }
      printf "name bed-%s\nnodes %d\ngpus_per_node %d\nnics_per_node 1\nrails 0\nleaf_nodes %d\npod_leaves 1\n", layout, k, n, k
      printf "hop_latency_us 0\npcie_gbps 1000\nefficiency 1\n"
      printf "nvlink_latency_us %s\nnvlink_gbps %.4f\n", get(within, "latency_us"), get(within, "bytes_per_us") / 1000
      # The probe between nodes runs every pair at once, so its rate is a rank'"'"'s share of
      # its node'"'"'s NIC (n ranks at once): the NIC carries n times that, at most its line rate.
      # tc counts framed bytes: a full TCP segment over the veth (MTU 1500) carries 1448
      # bytes (the MSS less 12 of timestamps) and is counted as 1514 (Ethernet 14, IPv4 20,
      # TCP 20 + 12): a flow gets 119.55 of 125 MB/s at 1 Gbit/s, as measured
      # (perf/data/sim_vs_bed/framing_sim16/; ACKs add 0.1%, left out). The NIC in framed
      # bytes: the probe'"'"'s figure as payload, at most the line rate.
      payload = 1448; header = 66
      nic = get(between, "bytes_per_us") * 8 / 1000 * n * (payload + header) / payload
      if (nic > line / 1000) nic = line / 1000
      printf "nic_latency_us %s\nnic_gbps %.4f\n", get(between, "latency_us"), nic
      printf "nic_packet_payload_bytes %d\nnic_packet_header_bytes %d\n", payload, header
      # tc tbf on each NIC direction (tests/testbed/netns_bed.sh): a bucket of 10 ms at the
      # line rate, at least 256 KiB, refilled at that rate; bursts go at the veth'"'"'s speed
      # (what the bucket does: docs/sim.md, eighth session).
      burst = line * 1e6 / 8 / 100; if (burst < 262144) burst = 262144
      printf "nic_burst_bytes %d\n", burst
      ow = get(within, "overhead_us"); ob = get(between, "overhead_us")
      sw = get(within, "overhead_share"); sb = get(between, "overhead_share")
      # The gap between a rank'"'"'s messages on a link (LogGP'"'"'s g, gap_us in the log: where
      # the probe'"'"'s burst cost more a message than o may; absent: none), per class.
      gw = get(within, "gap_us") + 0; gb = get(between, "gap_us") + 0
      if (sw != "" && sb != "") {
        # Each measured at its probe'"'"'s share of a core (LinkModel::callOverheadUs): one
        # whole core'"'"'s, which the replay charges at the call'"'"'s share, as the tuner does.
        printf "overhead_us %.3f\noverhead_share 1\n", (ow * sw + ob * sb) / 2
        gw *= sw; gb *= sb
      } else {
        printf "overhead_us %.3f\n", (ow + ob) / 2
      }
      if (gw > 0 || gb > 0) printf "gap_us %.3f\nnic_gap_us %.3f\n", gw, gb
      printf "reduce_gbps %.4f\ncopy_gbps %.4f\nhost_cores %d\n", get(within, "reduce_bytes_per_us") / 1000 / share, get(within, "copy_bytes_per_us") / 1000 / share, cores
      printf "host_load %s\ntransport_gbps %s\n", load, transport
      # A sender'"'"'s o at a whole core, on its CPU too (LinkModel::sendsHoldACore; docs/sim.md,
      # twentieth session): SENDS_HOLD_A_CORE=1 (off by default: it lowers four guarded counts).
      if (holds == 1) printf "sends_hold_a_core 1\n"
      # The cores of the host as a pool (LinkModel::poolCores; docs/sim.md, twenty-first session):
      # CORE_POOL=1, or 2 with o and g kept at the call share (off by default: see there for
      # what each did to the guarded counts).
      # With it, POOL_WAITERS_SPIN=1 (a waiting rank keeps its core, yielding, for the
      # engine'"'"'s spin) and POOL_BOUND_CORES=1 (rank r on core r mod cores, as the engine
      # binds it): twenty-second session, off by default.
      if (pool >= 1) printf "core_pool 1\n"
      if (pool == 2) printf "pool_overhead_at_call_share 1\n"
      if (pool >= 1 && spin == 1) printf "pool_waiters_spin 1\n"
      if (pool >= 1 && bound == 1) printf "pool_bound_cores 1\n"
    }' "$1"
}

# Simulates DIR/bed_L.fabric and prints the comparison with DIR/bed_L.txt: compare DIR L
compare() {
  local dir=$1 layout=$2 k=${2%x*} n=${2#*x}
  local csv first last fabric=$dir/bed_$layout.fabric
  csv=$(mktemp)
  # Rebuilt from the log where there is one, into a scratch file: a --compare (ctest's
  # sim_bed_agreement) leaves the recorded directory as it found it.
  if [[ -f $dir/bed_$layout.log ]]; then
    fabric=$(mktemp)
    fabric_of "$dir/bed_$layout.log" "$k" "$n" "$layout" >"$fabric"
  fi
  # The measured table's sizes (64K..64M unless BEGIN / END chose others when recorded).
  first=$(awk '/^ *[0-9]/ { print $1; exit }' "$dir/bed_$layout.txt")
  last=$(awk '/^ *[0-9]/ { s = $1 } END { print s }' "$dir/bed_$layout.txt")
  "$sim" --fabric-file "$fabric" -b "$first" -e "$last" -f 4 --csv "$csv" >/dev/null
  [[ $fabric == "$dir/bed_$layout.fabric" ]] || rm -f "$fabric"
  echo "# $layout ($k nodes x $n ranks): busbw GB/s measured / simulated (ratio sim/measured)"
  awk -v layout="$layout" '
    FNR == 1 { file++ }
    file == 1 && FNR > 1 { split($0, f, ","); sim[f[5], f[4]] = f[7]; simbest[f[5]] = f[8]; sizes[f[5]] = 1 }
    file == 2 && /^ *size/ { for (i = 2; i <= NF; ++i) col[i] = $i; ncol = NF }
    file == 2 && /^ *[0-9]/ {
      size = $1; best = ""; bestv = 0; line = sprintf("%10d", size)
      # nearest simulated size (chorus-sim rounds counts to a multiple of the ranks)
      near = ""; for (s in sizes) if (near == "" || (s - size) ^ 2 < (near - size) ^ 2) near = s
      for (i = 2; i <= ncol - 3; ++i) {
        v = $i; gsub(/\*/, "", v); a = col[i]
        if (v + 0 > bestv) { bestv = v + 0; best = a }
        s = sim[near, a]
        if (s == "") continue
        r = s / v; n++; if (r > 0.75 && r < 1.25) ok++
        line = line sprintf("  %s %.3g/%.3g (%.2f)", a, v, s, r)
      }
      pick = $(ncol - 1)
      print line
      # The simulated winner is a set: every algorithm tied for the fastest (chorus-sim
      # joins them with "|"), so a pick or a measured winner agrees when it is one of them.
      tied = simbest[near]; gsub(/\|/, "=", tied)
      printf "%10s  winner measured %s, simulated %s, tuner picked %s\n", "", best, tied, pick
      split(simbest[near], set, "|"); inBest = inPick = 0
      for (j in set) { if (set[j] == best) inBest = 1; if (set[j] == pick) inPick = 1 }
      sizesN++; same += inBest; tunerSame += inPick
    }
    END { printf "# %s: %d of %d within 25%%; simulated winner = measured at %d of %d sizes, = tuner pick at %d\n", layout, ok, n, same, sizesN, tunerSame }
  ' "$csv" "$dir/bed_$layout.txt"
  rm -f "$csv"
}

if [[ ${1:-} == --compare ]]; then
  for layout in ${3:-2x2 3x2}; do compare "$2" "$layout"; done
  exit 0
fi

mbit=${1:-1000}
export RATE_MBIT=$mbit
layouts=${2:-"2x2 3x2"} rounds=${3:-1} out=${4:-sim_vs_bed}
# Each size runs for at least this long (ms): tc's token bucket lets its burst (256 KiB)
# through at the veth's speed, so a few calls of a small size would beat the rate the
# model (and the bed in steady state) has.
min_ms=${MIN_MS:-200}
bed=tests/testbed/netns_bed.sh perf=${PERF:-$PWD/build/perf/chorus-perf}
# Under a real-time policy (chrt -f 1 perf/sim_vs_bed.sh ...) the ranks preempt the other
# tenants' threads whenever they can run: the fabric gets no host load (no .load file).
realtime=0
[[ $(chrt -p $$ 2>/dev/null) == *SCHED_FIFO* || $(chrt -p $$ 2>/dev/null) == *SCHED_RR* ]] && realtime=1
mkdir -p "$out"
for layout in $layouts; do
  k=${layout%x*} n=${layout#*x}
  # the host's load while the bed runs (host_load in the fabric)
  rm -f "$out/bed_$layout.load"
  sampler=
  if ((!realtime)); then
    (while :; do cut -d' ' -f1 /proc/loadavg; sleep 10; done) >"$out/bed_$layout.load" &
    sampler=$!
  fi
  $bed run -k "$k" -m 1 -r "${mbit}mbit" -n "$n" -t 1200 -e CHORUS_TUNE_PROBE=1 \
    -e CHORUS_DEBUG=INFO -- \
    "$perf" -t allreduce -A each -b "${BEGIN:-64K}" -e "${END:-64M}" -f 4 -K "$rounds" -n 2 -w 1 -T "$min_ms" >"$out/bed_$layout.log" 2>&1
  [[ -n $sampler ]] && kill "$sampler"
  sed -n 's/^\[0\] //p' "$out/bed_$layout.log" | grep -v 'CHORUS INFO' >"$out/bed_$layout.txt"
  fabric_of "$out/bed_$layout.log" "$k" "$n" "$layout" >"$out/bed_$layout.fabric"
  compare "$out" "$layout"
done
