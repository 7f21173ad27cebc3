#!/usr/bin/env bash
# Wait settings A/B: chorus-perf all-reduce runs under different environments (e.g.
# CHORUS_SPIN_US=0 against the default), alternating in one run (each round in a rotated
# order), then per size the median out-of-place busbw of each variant and, paired by round,
# each variant's ratio to the first one (and in how many rounds it was faster). The load
# average at each run's start is kept with it. Exits non-zero if a run fails.
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
[[ -n $log ]] || log=$(mktemp /tmp/chorus-wait-ab.XXXXXX)
: >"$log"
failed=0
for ((k = 1; k <= rounds; k++)); do
  for np in $nps; do
    for R in $regs; do
      alg=${algo:-$([[ $R == 0 ]] && echo allreduce:peer_staged || echo auto)}
      n=${#variants[@]}
      for ((i = 0; i < n; i++)); do
        v=${variants[$(((i + k) % n))]}
        name=${v%%=*} envs=${v#*=}
        [[ $envs == - ]] && envs="" || envs=${envs//,/ }
        load=$(cut -d' ' -f1 /proc/loadavg)
        rc=0
        # shellcheck disable=SC2086 # envs is a list of VAR=VALUE words
        out=$(env $envs timeout 300 "$build/tools/chorus-run" -n "$np" "$build/perf/chorus-perf" \
          -b "$minb" -e "$maxb" -f "$factor" -n 10 -w 2 -c 0 -R "$R" -A "$alg" 2>&1) || rc=$?
        awk -v k="$k" -v np="$np" -v R="$R" -v name="$name" -v load="$load" \
          '$1 ~ /^[0-9]+$/ && NF >= 12 {print k, np, R, name, load, $1, $8}' <<<"$out" >>"$log"
        if ((rc != 0)); then
          failed=1
          echo "wait_ab.sh: round $k np $np -R $R $name failed ($rc):" >&2
          tail -5 <<<"$out" >&2
        fi
      done
    done
  done
done
echo "log: $log (round np R variant load bytes busbw)"
python3 - "$log" "${variants[@]%%=*}" <<'EOF'
import collections, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
names = sys.argv[2:]  # in the order given, the first is the base
base = names[0]
bw = {(k, np, R, int(b), v): float(x) for k, np, R, v, load, b, x in rows}
for v in names:
    loads = [float(r[4]) for r in rows if r[3] == v]
    if not loads: continue  # every run of it failed
    print('%s: load %.1f-%.1f (median %.1f)' % (v, min(loads), max(loads), statistics.median(loads)))
print('np R size  ' + '  '.join('%s busbw' % v for v in names) +
      '  ' + '  '.join('%s/%s (faster)' % (v, base) for v in names if v != base))
for np, R, b in sorted({(int(r[1]), r[2], int(r[5])) for r in rows}):
    cells = []
    for v in names:
        xs = [x for (k, n, r, s, w), x in bw.items() if (int(n), r, s, w) == (np, R, b, v)]
        cells.append('%.2f' % statistics.median(xs) if xs else '-')
    for v in names:
        if v == base: continue
        rs = [x / bw[(k, n, r, s, base)] for (k, n, r, s, w), x in bw.items()
              if (int(n), r, s, w) == (np, R, b, v) and bw.get((k, n, r, s, base))]
        cells.append('%.2f (%d/%d)' % (statistics.median(rs), sum(q > 1 for q in rs), len(rs)) if rs else '-')
    print('%d %s %s  %s' % (np, R, '%gMiB' % (b / 2**20), '  '.join(cells)))
EOF
exit $failed
