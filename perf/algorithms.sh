#!/usr/bin/env bash
# Busbw of every algorithm of one collective, forced one at a time, next to the automatic
# choice (the tuner) and (with -m) Open MPI, for each rank count: the table issue 3 asks for.
#
#   perf/algorithms.sh [-t COLL] [-p "2 3 4 8"] [-b MIN] [-e MAX] [-f FACTOR] [-B BUILD] [-m]
#                      [-u busbw|time] [-K REPEATS]
#
# Prints, per rank count, one row per size: the out-of-place busbw in GB/s (or with -u time
# the time in us) of each forced algorithm, of `auto`, and of MPI, each the median of
# REPEATS runs taken in rotating order (this machine is noisy); '*' marks the best forced
# algorithm; auto/best and auto/mpi are ratios of speed (>= 1: auto is as fast or faster).
set -euo pipefail
coll=allreduce ranks="2 3 4 5 6 7 8" minb=8 maxb=64M factor=8 build=build with_mpi=0 unit=busbw
repeats=3
while getopts "t:p:b:e:f:B:mu:K:h" opt; do
  case $opt in
    t) coll=$OPTARG ;; p) ranks=$OPTARG ;; b) minb=$OPTARG ;; e) maxb=$OPTARG ;;
    f) factor=$OPTARG ;; B) build=$OPTARG ;; m) with_mpi=1 ;; u) unit=$OPTARG ;;
    K) repeats=$OPTARG ;;
    *) sed -n '2,11p' "$0"; exit 2 ;;
  esac
done
case $coll in
  allreduce) algos="ring oneshot twoshot rd rhd" ;;
  allgather) algos="ring rd bruck" ;;
  reducescatter) algos="ring rhd" ;;
  broadcast) algos="ring tree scatter_allgather" ;;
  reduce) algos="ring tree rsg" ;;
  alltoall) algos="pairwise" ;;
  *) echo "unknown collective $coll" >&2; exit 2 ;;
esac
run=$build/tools/chorus-run perf=$build/perf/chorus-perf mpi=$build/perf/compare_mpi
common=(-t "$coll" -b "$minb" -e "$maxb" -f "$factor" -c 1)
column=8
[ "$unit" = time ] && column=6
values() { awk -v c=$column '/^ +[0-9]/ {print $1, $c}'; }  # size, out-of-place busbw or time

measure() {  # column-name rank-count output-file
  case $1 in
    mpi) OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
           mpirun --oversubscribe -np "$2" "$mpi" "${common[@]}" | values >"$3" ;;
    auto) "$run" -n "$2" --timeout 600 "$perf" "${common[@]}" | values >"$3" ;;
    *) "$run" -n "$2" --timeout 600 "$perf" "${common[@]}" -A "$coll:$1" | values >"$3" ;;
  esac
}

for np in $ranks; do
  tmp=$(mktemp -d)
  cols="$algos auto"
  ((with_mpi)) && cols="$cols mpi"
  read -r -a order <<<"$cols"
  for ((rep = 0; rep < repeats; rep++)); do
    for ((i = 0; i < ${#order[@]}; i++)); do  # rotate the order each repeat
      c=${order[$(((i + rep) % ${#order[@]}))]}
      measure "$c" "$np" "$tmp/$c.$rep"
    done
  done
  echo "# $coll, $np ranks: out-of-place $unit (median of $repeats), * = best forced algorithm"
  printf '%10s' size; for c in $cols; do printf '%11s' "$c"; done
  printf '%11s' auto/best; ((with_mpi)) && printf '%11s' auto/mpi; echo
  awk -v cols="$cols" -v algos="$algos" -v dir="$tmp" -v unit="$unit" -v reps="$repeats" '
    function median(list,    n, x, i, j, t) {
      n = split(list, x, " ")
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] + 0 < x[i] + 0) { t = x[i]; x[i] = x[j]; x[j] = t }
      return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
    }
    function faster(a, b) { return unit == "time" ? a < b : a > b }
    function speedRatio(a, b) { return unit == "time" ? b / a : a / b }  # >1: a is faster
    BEGIN {
      n = split(cols, c, " "); na = split(algos, a, " ")
      for (i = 1; i <= n; i++) for (r = 0; r < reps; r++) {
        f = dir "/" c[i] "." r
        while ((getline line < f) > 0) { split(line, x, " "); all[c[i], x[1]] = all[c[i], x[1]] " " x[2]; sizes[x[1]] = 1 }
      }
      for (k in all) v[k] = median(all[k])
      m = 0; for (s in sizes) order[++m] = s + 0
      for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (order[j] < order[i]) { t = order[i]; order[i] = order[j]; order[j] = t }
      for (k = 1; k <= m; k++) {
        s = order[k]; best = ""; bv = ""
        for (i = 1; i <= na; i++) {
          if (!((a[i], s) in v)) continue
          if (bv == "" || faster(v[a[i], s], bv)) { bv = v[a[i], s]; best = a[i] }
        }
        printf "%10s", s
        for (i = 1; i <= n; i++) printf "%10s%s", ((c[i], s) in v ? v[c[i], s] : "-"), (c[i] == best ? "*" : " ")
        printf "%11.2f", (bv > 0 && v["auto", s] > 0) ? speedRatio(v["auto", s], bv) : 0
        if (("mpi", s) in v) printf "%11.2f", (v["mpi", s] > 0 && v["auto", s] > 0) ? speedRatio(v["auto", s], v["mpi", s]) : 0
        printf "\n"
      }
    }'
  rm -rf "$tmp"
done
