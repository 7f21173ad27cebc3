#!/usr/bin/env bash
# Small all-reduce latency against Open MPI: perf/compare.sh with small sizes and more
# rounds (Open MPI's compare_mpi, Chorus from BUILD and, with -O OLD_BUILD, from an older
# build, alternating; medians and ratios per size). Exits non-zero on a failed run or a
# wrong element.
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
args=(-n "$np" -K "$reps" -B "$build" -b "$minb" -e "$maxb" -f "$factor")
[[ -n $old ]] && args+=(-O "$old")
exec "$(dirname "$0")/compare.sh" "${args[@]}"
