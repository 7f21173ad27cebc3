#!/usr/bin/env bash
# The UCX transport against raw UCX on this host, 2 ranks:
#   perf/ucx_vs_raw.sh [build-dir]          (default: build)
#
# For each error mode of the transport (CHORUS_UCX_ERR_MODE=peer: UCX picks tcp, since
# its shared-memory transports cannot report a dead peer; none: sysv/posix + cma) it runs
#   - chorus-perf broadcast (one direction, rank 0 -> 1) and sendrecv (both directions at
#     once; algbw counts one direction) over CHORUS_TRANSPORT=ucx, out-of-place algbw;
#   - ucx_perftest tag_bw (one direction) on the same UCX transports (UCX_TLS=tcp,self
#     for peer, UCX's default for none); and at 8 bytes chorus-perf sendrecv's time per
#     call next to ucx_perftest tag_lat;
# and prints GB/s (1e9 bytes/s) side by side, with broadcast / tag_bw.
# Environment: SIZES (bytes, default "65536 1048576 4194304 16777216 67108864").
set -euo pipefail
build=${1:-build}
run=$build/tools/chorus-run
perf=$build/perf/chorus-perf
for f in "$run" "$perf"; do
  [[ -x $f ]] || { echo "ucx_vs_raw: $f not built" >&2; exit 1; }
done
command -v ucx_perftest >/dev/null || { echo "ucx_vs_raw: ucx_perftest missing (apt-get install ucx-utils)" >&2; exit 1; }
read -r -a sizes <<<"${SIZES:-65536 1048576 4194304 16777216 67108864}"
min=${sizes[0]}
max=${sizes[-1]}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# chorus-perf over ucx: prints "size algbw" rows (out-of-place).
chorus() {  # mode collective
  CHORUS_TRANSPORT=ucx CHORUS_UCX_ERR_MODE=$1 \
    "$run" -n 2 --timeout 300 "$perf" -t "$2" -b "$min" -e "$max" -f 4 -c 0 -n 20 -w 3 \
    2>/dev/null | awk '/^ +[0-9]/ {print $1, $7}'
}

# ucx_perftest, server and client on localhost; prints the client's result row.
raw() {  # tls test size iters
  local port=$((20000 + RANDOM % 20000)) tls=$1
  local env=()
  [[ $tls != default ]] && env=(UCX_TLS="$tls")
  env "${env[@]}" timeout 120 ucx_perftest -p "$port" -t "$2" -s "$3" -n "$4" -w 10 -f \
    >"$tmp/server" 2>&1 &
  local server=$!
  local out=""
  for _ in $(seq 50); do  # the server needs a moment to listen
    sleep 0.1
    if out=$(env "${env[@]}" timeout 120 ucx_perftest localhost -p "$port" -t "$2" -s "$3" \
      -n "$4" -w 10 -f 2>&1); then
      break
    fi
    out=""
  done
  wait "$server" 2>/dev/null || true
  awk '$1 ~ /^[0-9]+$/ && NF >= 8 {print; exit}' <<<"$out"
}

echo "# $(date -u +%F\ %T) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(ucx_info -v | head -1)"
for mode in peer none; do
  tls=default
  [[ $mode == peer ]] && tls=tcp,self
  chorus "$mode" broadcast >"$tmp/bcast"
  chorus "$mode" sendrecv >"$tmp/sendrecv"
  lat=$(raw "$tls" tag_lat 8 20000 | awk '{print $3}')
  small=$(CHORUS_TRANSPORT=ucx CHORUS_UCX_ERR_MODE=$mode "$run" -n 2 --timeout 120 "$perf" \
    -t sendrecv -b 8 -e 8 -c 0 2>/dev/null | awk '/^ +[0-9]/ {print $6}')
  echo
  echo "## CHORUS_UCX_ERR_MODE=$mode vs ucx_perftest with UCX_TLS=$tls"
  echo "# 8 B: chorus sendrecv ${small:-?} us per call; raw tag_lat ${lat:-?} us (half round trip)"
  printf '%12s %14s %14s %14s %10s\n' bytes "bcast GB/s" "sendrecv GB/s" "tag_bw GB/s" bcast/raw
  for s in "${sizes[@]}"; do
    iters=$(((1 << 30) / s))
    ((iters < 20)) && iters=20
    ((iters > 2000)) && iters=2000
    # Column 5: average bandwidth in MB/s (2^20 bytes).
    bw=$(raw "$tls" tag_bw "$s" "$iters" | awk '{printf "%.2f", $5 * 1048576 / 1e9}')
    b=$(awk -v s="$s" '$1 == s {print $2}' "$tmp/bcast")
    r=$(awk -v s="$s" '$1 == s {print $2}' "$tmp/sendrecv")
    ratio=$(awk -v b="${b:-0}" -v w="${bw:-0}" 'BEGIN {if (w > 0) printf "%.0f%%", 100 * b / w; else print "?"}')
    printf '%12s %14s %14s %14s %10s\n' "$s" "${b:-?}" "${r:-?}" "${bw:-?}" "$ratio"
  done
done
