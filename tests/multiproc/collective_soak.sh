#!/usr/bin/env bash
# Soak of every collective (not in CI): N random trials drawn from SEED, each one
# chorus-perf run, checked in and out of place (-c 1: every element against the inputs
# every rank can compute, chorus_perf_data.hpp), of a random
#   transport (shm, tcp, and ucx when built; ib when TRANSPORTS names it), rank count
#   (1..MAX_RANKS), collective (all-reduce, all-gather, reduce-scatter, broadcast, reduce,
#   sendrecv, all-to-all),
#   algorithm (the tuner's pick, or one of the collective's algorithms forced; the
#   hierarchical ones over a random layout of "nodes" written as a topology file),
#   three sizes at an odd step in one of three ranges (bytes, kilobytes, megabytes), type
#   (or all of them) and every op (at megabytes: one type and one op), root (one, or every
#   rank in turn), buffers (-R 0..3),
#   and transport settings (FIFO, slice and block sizes, streams, endpoints, rails, queue
#   pairs, the rendezvous thresholds, UCX's peer error handling, the kernels' instruction
#   set). Over verbs, inside the Soft-RoCE guest: tests/rdma/soak_guest.sh SOAK=collective.
# A one-sided algorithm is forced only where it can run (shm, ucx or ib, registered or memAlloc
# buffers; peer_staged on any buffers, shm only): elsewhere the library refuses it with an
# error (CI's argument-error tests), which is not what a soak looks for.
# Each failing trial prints one line that reruns it alone (its settings, topology file
# and command) and the last lines of its output; exits non-zero when any trial failed
# (an error, a hang past TRIAL_TIMEOUT, or a wrong element).
#   tests/multiproc/collective_soak.sh N [SEED]     (default: 100, the clock)
# Env: CHORUS_BUILD (default ./build), MAX_RANKS (default 9), TRIAL_TIMEOUT (default 180 s),
# TRANSPORTS (default: shm, tcp and ucx, those built), KEEP (a folder: every trial's output
# kept there), PROGRESS (default 50: a line every that many trials).
set -u
trials=${1:-100}
seed=${2:-$(date +%s)}
build=${CHORUS_BUILD:-build}
max_ranks=${MAX_RANKS:-9}
trial_timeout=${TRIAL_TIMEOUT:-180}
RANDOM=$((seed % 32768))
# pick VAR ARRAY: VAR = a random element. Not $(...): a subshell reseeds RANDOM (bash 5.1+),
# and a trial must follow from the seed alone.
pick() { local -n to=$1 from=$2; to=${from[$((RANDOM % ${#from[@]}))]}; }

transports=(shm tcp)
[ -d "$build/CMakeFiles/chorus.dir/transports/ucx" ] && transports+=(ucx)
[ -n "${TRANSPORTS:-}" ] && read -r -a transports <<<"$TRANSPORTS"
collectives=(allreduce allgather reducescatter broadcast reduce sendrecv alltoall)
types=(int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3 f8e5m2 all)
ops=(sum prod min max avg)
algos_allreduce=(ring oneshot twoshot rd rhd hier hier_rd hier_rhd peer_oneshot peer_twoshot
                 peer_push peer_ring peer_staged)
algos_allgather=(ring rd bruck peer_ring hier)
algos_reducescatter=(ring rhd peer_direct hier)
algos_broadcast=(ring tree scatter_allgather peer_direct)
algos_reduce=(ring tree rsg)
algos_alltoall=(pairwise peer_direct)
one_sided=" peer_oneshot peer_twoshot peer_push peer_ring peer_direct "
kisa=(avx512 avx2 generic)
topo_dir=$(mktemp -d)
trap 'rm -rf "$topo_dir"' EXIT

# A random layout of np ranks on 2..np "nodes": contiguous blocks of random sizes, or
# round robin, written to a file named in $topo.
layout() {
  local np=$1 nodes=$((RANDOM % ($1 - 1) + 2)) file=$topo_dir/t$2.topo node
  local -a members=()
  if ((RANDOM % 2)); then
    for ((r = 0; r < np; r++)); do members[$((r % nodes))]+="${members[$((r % nodes))]:+,}$r"; done
  else
    # nodes-1 distinct cut points in 1..np-1
    local -a cuts=() ; local c
    while ((${#cuts[@]} < nodes - 1)); do
      c=$((RANDOM % (np - 1) + 1))
      [[ " ${cuts[*]} " == *" $c "* ]] || cuts+=("$c")
    done
    readarray -t cuts <<<"$(printf '%s\n' "${cuts[@]}" 0 "$np" | sort -n)"  # no /dev/fd in the guest
    for ((node = 0; node < nodes; node++)); do
      for ((r = cuts[node]; r < cuts[node + 1]; r++)); do members[node]+="${members[node]:+,}$r"; done
    done
  fi
  : >"$file"
  for ((node = 0; node < nodes; node++)); do echo "node n$node ranks ${members[node]}" >>"$file"; done
  # every rank on exactly one node, or the trial would test a layout error
  local listed
  listed=$(sed 's/.* ranks //' "$file" | tr ',' '\n' | sort -n | tr '\n' ' ')
  [ "$listed" = "$(seq 0 $((np - 1)) | tr '\n' ' ')" ] ||
    { echo "collective_soak: a bad layout of $np ranks:" >&2; cat "$file" >&2; return 1; }
  topo=$file
}

failures=0
for ((t = 0; t < trials; t++)); do
  pick transport transports
  np=$((RANDOM % max_ranks + 1))
  pick coll collectives
  size_class=$((RANDOM % 3))
  pick type types
  op=all
  if ((size_class == 2)); then  # megabytes: one type and op (all of them take minutes)
    type=${types[$((RANDOM % (${#types[@]} - 1)))]}
    pick op ops
  fi
  buffers=$((RANDOM % 4))
  env=(CHORUS_TRANSPORT=$transport)
  topo=""
  args=(-t "$coll" -d "$type" -o "$op" -n 1 -w 0 -c 1 -T 0)
  # the algorithm: the tuner's pick half of the time
  algo=auto
  if [ "$coll" != sendrecv ] && ((RANDOM % 2)); then  # sendrecv has one way to go
    pick algo "algos_$coll"
    if [[ $one_sided == *" $algo "* ]]; then
      [ "$transport" = tcp ] && transport=shm && env=(CHORUS_TRANSPORT=shm)
      ((buffers == 1 || buffers == 2)) || buffers=$((RANDOM % 2 + 1))
    fi
    if [ "$algo" = peer_staged ]; then transport=shm && env=(CHORUS_TRANSPORT=shm); fi
    if [[ $algo == hier* ]]; then
      ((np >= 2)) || np=2
      layout "$np" "$t" || exit 2
      env+=("CHORUS_TOPO_FILE=$topo")
    fi
    args+=(-A "$coll:$algo")
  fi
  args+=(-R "$buffers")
  case $coll in broadcast | reduce)
    if ((RANDOM % 3 == 0)); then args+=(-r -1); else args+=(-r $((RANDOM % np))); fi ;;
  esac
  # three sizes: bytes, kilobytes or megabytes, at an odd step
  case $size_class in
    0) first=$((RANDOM % 4096 + 1)) step=$((RANDOM % 2000 + 1)) ;;
    1) first=$((RANDOM % 300000 + 1)) step=$((RANDOM % 300000 + 1)) ;;
    *) first=$(((RANDOM * 32768 + RANDOM) % 4000000 + 1)) step=$(((RANDOM * 32768 + RANDOM) % 2000000 + 1)) ;;
  esac
  args+=(-b "$first" -e $((first + 2 * step)) -f 1 -i "$step")
  # settings: each drawn half of the time
  ((RANDOM % 2)) && env+=("CHORUS_SLICE_BYTES=$(((RANDOM % 64 + 1) * 4096))")
  if ((RANDOM % 2)); then pick isa kisa && env+=("CHORUS_KERNEL_ISA=$isa"); fi
  case $transport in
    shm)
      ((RANDOM % 2)) && env+=("CHORUS_SHM_FIFO_BYTES=$((65536 << (RANDOM % 5)))")
      ((RANDOM % 2)) && env+=("CHORUS_STREAM_FROM_BYTES=$(((RANDOM % 64) * 65536))")
      ((RANDOM % 3 == 0)) && env+=("CHORUS_SPIN_US=0") ;;
    tcp)
      ((RANDOM % 2)) && env+=("CHORUS_TCP_STREAMS=$((RANDOM % 4 + 1))")
      ((RANDOM % 2)) && env+=("CHORUS_TCP_BLOCK=$(((RANDOM % 64 + 1) * 4096 + RANDOM % 8))") ;;
    ib)
      ((RANDOM % 2)) && env+=("CHORUS_IB_QPS_PER_CONNECTION=$((RANDOM % 3 + 1))")
      ((RANDOM % 2)) && env+=("CHORUS_IB_RNDV_BYTES=$(((RANDOM % 2) * (1024 << (RANDOM % 8))))")
      ((RANDOM % 2)) && env+=("CHORUS_IB_BLOCK=$(((RANDOM % 64 + 1) * 4096))") ;;
    ucx)
      ((RANDOM % 2)) && env+=("CHORUS_UCX_PATHS=$((RANDOM % 3 + 1))")
      ((RANDOM % 3 == 0)) && env+=("CHORUS_UCX_NET_DEVICES=lo,lo")
      ((RANDOM % 2)) && env+=("CHORUS_UCX_RNDV_BYTES=$((1024 << (RANDOM % 8)))")
      ((RANDOM % 3 == 0)) && env+=("CHORUS_UCX_ERR_MODE=none")
      ((RANDOM % 2)) && env+=("CHORUS_UCX_BLOCK=$(((RANDOM % 64 + 1) * 4096))") ;;
  esac
  cmd=("$build/tools/chorus-run" -n "$np" --timeout "$trial_timeout" "$build/perf/chorus-perf" "${args[@]}")
  line="${env[*]} ${cmd[*]}"
  out=$(env "${env[@]}" timeout $((trial_timeout + 30)) "${cmd[@]}" 2>&1)
  rc=$?
  if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP"
    { echo "$line"; [ -z "$topo" ] || sed 's/^/topology: /' "$topo"; echo "$out"; } >"$KEEP/trial$t.log"
  fi
  if [ $rc -ne 0 ] || ! grep -q "Out of bounds values : 0 OK" <<<"$out"; then
    failures=$((failures + 1))
    echo "FAIL trial $t (exit $rc): $line"
    [ -z "$topo" ] || sed 's/^/  topology: /' "$topo"
    { grep -m 4 -iE "error|wrong|FAILED" <<<"$out"; tail -n 2 <<<"$out"; } | sed 's/^/  /'
  fi
  (((t + 1) % ${PROGRESS:-50})) || echo "collective_soak: $((t + 1)) of $trials trials, $failures failed"
done
echo "collective_soak: seed $seed, $trials trials, $failures failed"
[ $failures -eq 0 ]
