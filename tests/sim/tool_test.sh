#!/usr/bin/env bash
# chorus-sim end to end on a 256-GPU DGX H100-like fabric (flow-level model, ECMP): every
# all-reduce algorithm at 64 KiB, 1 MiB, 16 MiB and 256 MiB, and per size the tuner's pick
# (its two link classes from the same fabric, sim::tunerLinks) must be the simulator's
# fastest. Checks the CSV, not the printed table.
#   tool_test.sh path/to/chorus-sim
set -euo pipefail
sim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$sim" --fabric dgx-h100 --gpus 256 -b 64K -e 256M -f 16 --csv "$tmp/out.csv" >"$tmp/out.txt"
awk -F, '
  NR == 1 { if ($8 != "best" || $9 != "tuner") { print "unexpected header: " $0; bad = 1 }; next }
  { rows++; if (!($6 > 0)) { print "no time: " $0; bad = 1 }
    best[$5] = $8; tuner[$5] = $9; algos[$4] = 1 }
  END {
    for (b in best) {
      sizes++
      printf "%12d B: fastest %s, tuner %s\n", b, best[b], tuner[b]
      # best: every algorithm tied for the fastest, joined by "|"
      if (index("|" best[b] "|", "|" tuner[b] "|") == 0) { print "  the tuner disagrees with the simulator"; bad = 1 }
    }
    n = 0; for (a in algos) n++
    if (sizes != 4 || n != 8) { printf "expected 4 sizes x 8 algorithms, got %d x %d\n", sizes, n; bad = 1 }
    exit bad
  }' "$tmp/out.csv"
