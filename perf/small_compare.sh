#!/usr/bin/env bash
# Small all-reduce latency, alternating in one run: Open MPI (compare_mpi), Chorus from
# BUILD and, with -O OLD_BUILD, Chorus from an older build (before/after a change).
# Prints the median out-of-place time per size and the ratios. Exits non-zero on a failed
# run or a wrong element.
#   perf/small_compare.sh [-n NP] [-K REPS] [-B BUILD] [-O OLD_BUILD] [-b MIN] [-e MAX] [-f F]
set -euo pipefail
np=4 reps=7 build=build old="" minb=8 maxb=64 factor=8
while getopts "n:K:B:O:b:e:f:" opt; do
  case $opt in
    n) np=$OPTARG ;; K) reps=$OPTARG ;; B) build=$OPTARG ;; O) old=$OPTARG ;;
    b) minb=$OPTARG ;; e) maxb=$OPTARG ;; f) factor=$OPTARG ;;
    *) sed -n '2,6p' "$0"; exit 2 ;;
  esac
done
args=(-t allreduce -d float -o sum -b "$minb" -e "$maxb" -f "$factor")
mpirun_cmd=(mpirun -np "$np" --oversubscribe)
[[ $(id -u) == 0 ]] && mpirun_cmd+=(--allow-run-as-root)
declare -A cmds
names=(mpi new)
cmds[mpi]="${mpirun_cmd[*]} $build/perf/compare_mpi ${args[*]}"
cmds[new]="$build/tools/chorus-run -n $np $build/perf/chorus-perf ${args[*]}"
if [[ -n $old ]]; then
  names+=(old)
  # Its own libchorus first, as compare.sh does (a copied build's rpath may point nowhere).
  cmds[old]="env LD_LIBRARY_PATH=$(cd "$old" && pwd) $old/tools/chorus-run -n $np $old/perf/chorus-perf ${args[*]}"
fi
logdir=$(mktemp -d /tmp/chorus-small.XXXXXX)
for ((rep = 1; rep <= reps; rep++)); do
  for name in "${names[@]}"; do
    log=$logdir/$name.$rep.log
    if ! ${cmds[$name]} >"$log" 2>&1 || ! grep -q "^# Out of bounds values : 0 OK" "$log"; then
      echo "small_compare.sh: $name failed (run $rep), see $log" >&2
      exit 1
    fi
  done
done
echo "# np $np, $reps alternating runs, median out-of-place time (us); load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "# %8s %10s %10s %10s %12s %12s\n" size mpi new old mpi/new old/new
for size in $(awk '!/^#/ && NF >= 13 { print $1 }' "$logdir/mpi.1.log"); do
  med() { { cat "$logdir/$1".*.log 2>/dev/null || true; } | awk -v s="$size" '!/^#/ && NF >= 13 && $1 == s { print $6 }' |
          sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'; }
  m=$(med mpi) n=$(med new) o=$(med old)
  awk -v s="$size" -v m="$m" -v n="$n" -v o="$o" \
    'BEGIN { printf "  %8s %10.2f %10.2f %10.2f %12.2f %12.2f\n", s, m, n, o, m / n, o / n }'
done
