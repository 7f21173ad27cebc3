#!/usr/bin/env bash
# Runs compare_mpi (mpirun) and chorus-perf (chorus-run, and with -m also mpirun) on the
# same sizes, alternating (perf/alternate.py: each round in a rotated order), and prints
# per size the median out-of-place time and bus bandwidth side by side, each against Open
# MPI's (ratio > 1: faster than MPI), per round too. Exits non-zero if any run fails (an
# error, or a wrong element).
#
#   perf/compare.sh [-n NP] [-t COLL] [-b MIN] [-e MAX] [-f FACTOR] [-d TYPE] [-o OP]
#                   [-K REPS] [-B BUILD_DIR] [-O OLD_BUILD] [-m] [-R "1 2"] [-l LOG_DIR]
#                   [-- extra flags]
#
# -R "1 2": also chorus-perf -R 1 (registered buffers) and -R 2 (memAlloc buffers), as
# more columns. -O OLD_BUILD: the same Chorus runs from an older build directory too
# (before/after a change), its libchorus first on LD_LIBRARY_PATH, as columns old,
# old_R1 ... Every run also writes JSON (LOG_DIR/NAME.REP.json) for perf/plot.py.
# Defaults: -n 4 -t allreduce -d float -o sum -b 8 -e 64M -f 2 -K 3 -B build.
# MPIRUN_ARGS (environment) is added to every mpirun command line.
set -euo pipefail

np=4 coll=allreduce type=float op=sum minb=8 maxb=64M factor=2 reps=3
build=build old="" with_mpirun_chorus=0 logdir="" registrations=""
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }
while getopts "n:t:b:e:f:d:o:K:B:O:mR:l:h" opt; do
  case $opt in
    n) np=$OPTARG ;;
    t) coll=$OPTARG ;;
    b) minb=$OPTARG ;;
    e) maxb=$OPTARG ;;
    f) factor=$OPTARG ;;
    d) type=$OPTARG ;;
    o) op=$OPTARG ;;
    K) reps=$OPTARG ;;
    B) build=$OPTARG ;;
    O) old=$OPTARG ;;
    m) with_mpirun_chorus=1 ;;
    R) registrations=$OPTARG ;;
    l) logdir=$OPTARG ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
extra=("$@")

perf_bin=$build/perf/chorus-perf
mpi_bin=$build/perf/compare_mpi
run_bin=$build/tools/chorus-run
for f in "$perf_bin" "$mpi_bin" "$run_bin"; do
  [[ -x $f ]] || { echo "compare.sh: $f not found (build first, or pass -B)" >&2; exit 2; }
done

mpirun_cmd=(mpirun -np "$np" --oversubscribe)
[[ $(id -u) == 0 ]] && mpirun_cmd+=(--allow-run-as-root)
# shellcheck disable=SC2206 # MPIRUN_ARGS is meant to split into words
mpirun_cmd+=(${MPIRUN_ARGS:-})

bench_args=(-t "$coll" -d "$type" -o "$op" -b "$minb" -e "$maxb" -f "$factor" "${extra[@]}")
[[ -n $logdir ]] || logdir=$(mktemp -d /tmp/chorus-compare.XXXXXX)
mkdir -p "$logdir"

names=(mpi)
declare -A cmds
cmds[mpi]="${mpirun_cmd[*]} $mpi_bin ${bench_args[*]}"
# Column NAME runs RUN with the bench flags, and NAME_R<r> with -R <r> for each -R asked.
add_chorus_columns() {
  local name=$1 run=$2 r
  names+=("$name")
  cmds[$name]="$run ${bench_args[*]}"
  for r in $registrations; do
    names+=("${name}_R$r")
    cmds[${name}_R$r]="$run ${bench_args[*]} -R $r"
  done
}
add_chorus_columns chorus "$run_bin -n $np $perf_bin"
if ((with_mpirun_chorus)); then
  names+=(chorus_mpirun)
  cmds[chorus_mpirun]="${mpirun_cmd[*]} $perf_bin ${bench_args[*]}"
fi
if [[ -n $old ]]; then
  [[ -x $old/perf/chorus-perf && -x $old/tools/chorus-run ]] ||
    { echo "compare.sh: no chorus-perf / chorus-run under $old" >&2; exit 2; }
  add_chorus_columns old \
    "env LD_LIBRARY_PATH=$(cd "$old" && pwd) $old/tools/chorus-run -n $np $old/perf/chorus-perf"
fi

columns=()
for name in "${names[@]}"; do columns+=("$name=${cmds[$name]} -J {json}"); done
exec python3 "$(dirname "$0")/alternate.py" -K "$reps" -l "$logdir" --np "$np" --coll "$coll" \
  --title "compare.sh: $coll $type $op, np $np, sizes $minb..$maxb x$factor" "${columns[@]}"
