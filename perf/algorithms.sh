#!/usr/bin/env bash
# Busbw of every algorithm of one collective, forced one at a time, next to the automatic
# choice and (with -m) Open MPI, for each rank count: the table issue 3 asks for.
#
#   perf/algorithms.sh [-t COLL] [-p "2 3 4 8"] [-b MIN] [-e MAX] [-f FACTOR] [-B BUILD] [-m] [-u busbw|time]
#
# Prints, per rank count, one row per size: the out-of-place busbw in GB/s (or with -u time
# the time in us) of each forced algorithm, of `auto`, and of MPI; '*' marks the best forced
# algorithm.
set -euo pipefail
coll=allreduce ranks="2 3 4 5 6 7 8" minb=8 maxb=64M factor=8 build=build with_mpi=0 unit=busbw
while getopts "t:p:b:e:f:B:mu:h" opt; do
  case $opt in
    t) coll=$OPTARG ;; p) ranks=$OPTARG ;; b) minb=$OPTARG ;; e) maxb=$OPTARG ;;
    f) factor=$OPTARG ;; B) build=$OPTARG ;; m) with_mpi=1 ;; u) unit=$OPTARG ;;
    *) sed -n '2,9p' "$0"; exit 2 ;;
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
column=8 better=max
[ "$unit" = time ] && column=6 better=min
busbw() { awk -v c=$column '/^ +[0-9]/ {print $1, $c}'; }  # size, out-of-place busbw or time

for np in $ranks; do
  tmp=$(mktemp -d)
  for a in $algos; do
    "$run" -n "$np" --timeout 600 "$perf" "${common[@]}" -A "$coll:$a" | busbw >"$tmp/$a"
  done
  "$run" -n "$np" --timeout 600 "$perf" "${common[@]}" | busbw >"$tmp/auto"
  cols="$algos auto"
  if ((with_mpi)); then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      mpirun --oversubscribe -np "$np" "$mpi" "${common[@]}" | busbw >"$tmp/mpi"
    cols="$cols mpi"
  fi
  echo "# $coll, $np ranks: out-of-place $unit, * = best forced algorithm"
  printf '%12s' size; for c in $cols; do printf '%12s' "$c"; done; echo
  awk -v cols="$cols" -v algos="$algos" -v dir="$tmp" -v better="$better" '
    BEGIN {
      n = split(cols, c, " "); na = split(algos, a, " ")
      for (i = 1; i <= n; i++) {
        f = dir "/" c[i]
        while ((getline line < f) > 0) { split(line, x, " "); v[c[i], x[1]] = x[2]; sizes[x[1]] = 1 }
      }
      m = 0; for (s in sizes) order[++m] = s + 0
      for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (order[j] < order[i]) { t = order[i]; order[i] = order[j]; order[j] = t }
      for (k = 1; k <= m; k++) {
        s = order[k]; best = ""; bv = ""
        for (i = 1; i <= na; i++) {
          if (!((a[i], s) in v)) continue
          val = v[a[i], s] + 0
          if (bv == "" || (better == "max" ? val > bv : val < bv)) { bv = val; best = a[i] }
        }
        printf "%12s", s
        for (i = 1; i <= n; i++) printf "%11s%s", ((c[i], s) in v ? v[c[i], s] : "-"), (c[i] == best ? "*" : " ")
        printf "\n"
      }
    }'
  rm -rf "$tmp"
done
