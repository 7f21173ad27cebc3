#!/usr/bin/env bash
# Wait settings A/B: chorus-perf all-reduce runs under different environments (e.g.
# CHORUS_SPIN_US=0 against the default), alternating (perf/alternate.py: each round in a
# rotated order), for each np and -R in turn; per size the median out-of-place time and
# busbw of each variant and, paired by round, each variant's ratio to the first one (and
# in how many rounds it was faster). The load average at each run's start is kept with it.
# Exits non-zero if a run fails. -l LOG is a directory (one per np and -R under it).
#
#   perf/wait_ab.sh [-n "NPS"] [-R "0 2"] [-K ROUNDS] [-b MIN] [-e MAX] [-f F] [-B BUILD]
#                   [-l LOG] NAME=VAR=VALUE[,VAR=VALUE] ... (NAME=- for no change)
#
# -R 0 forces allreduce:peer_staged (malloc buffers; -A below overrides), -R 2 leaves the
# pick to the library on memAlloc buffers (a peer_* one-sided algorithm).
# Example (perf/README.md, "Waiting on the staged path"):
#   perf/wait_ab.sh -n "4 2" -R "0 2" -K 5 def=- s0=CHORUS_SPIN_US=0 ya0=CHORUS_YIELD_ADAPT=0
set -euo pipefail
nps=4 regs=0 rounds=5 minb=1M maxb=64M factor=4 build=build log="" algo=""
while getopts "n:R:K:b:e:f:B:l:A:" opt; do
  case $opt in
    n) nps=$OPTARG ;; R) regs=$OPTARG ;; K) rounds=$OPTARG ;; b) minb=$OPTARG ;;
    e) maxb=$OPTARG ;; f) factor=$OPTARG ;; B) build=$OPTARG ;; l) log=$OPTARG ;;
    A) algo=$OPTARG ;;
    *) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
variants=("$@")
((${#variants[@]} >= 2)) || { echo "wait_ab.sh: give two variants or more" >&2; exit 2; }
[[ -n $log ]] || log=$(mktemp -d /tmp/chorus-wait-ab.XXXXXX)
failed=0
for np in $nps; do
  for R in $regs; do
    alg=${algo:-$([[ $R == 0 ]] && echo allreduce:peer_staged || echo auto)}
    columns=()
    for v in "${variants[@]}"; do
      name=${v%%=*} envs=${v#*=}
      [[ $envs == - ]] && envs="" || envs=${envs//,/ }
      columns+=("$name=env $envs timeout 300 $build/tools/chorus-run -n $np $build/perf/chorus-perf \
-b $minb -e $maxb -f $factor -n 10 -w 2 -c 0 -R $R -A $alg")
    done
    python3 "$(dirname "$0")/alternate.py" -K "$rounds" -l "$log/np$np.R$R" --np "$np" \
      --title "np $np -R $R -A $alg" "${columns[@]}" || failed=1
  done
done
exit $failed
