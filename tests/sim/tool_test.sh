#!/usr/bin/env bash
# chorus-sim end to end on a 256-GPU DGX H100-like fabric (flow-level model, ECMP): every
# all-reduce algorithm at 64 KiB, 1 MiB, 16 MiB and 256 MiB, and per size the tuner's pick
# (its two link classes from the same fabric, sim::tunerLinks) must be the simulator's
# fastest. Then every collective on a uniform 8-GPU fabric: busbw factors, the best and
# tuner columns (below). Checks the CSV, not the printed table.
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

# Every collective on a uniform 8-GPU fabric, 1 and 4 MiB: per CSV row busbw = bytes / us /
# 1e3 x nccl-tests' factor for the collective (2(n-1)/n all-reduce; (n-1)/n all-gather,
# reduce-scatter, all-to-all; 1 broadcast, reduce), and per size "best" is exactly the set
# of algorithms with the least time, the tuner's pick one of the rows.
for c in allreduce allgather reducescatter broadcast reduce alltoall; do
  "$sim" -c $c --fabric uniform --gpus 8 -b 1M -e 4M -f 4 --csv "$tmp/$c.csv" >"$tmp/$c.txt"
  awk -F, -v want=$c '
    NR == 1 { next }
    { name = tolower($1); n = $3
      f = name == "allreduce" ? 2 * (n - 1) / n : \
          (name == "allgather" || name == "reducescatter" || name == "alltoall") ? (n - 1) / n : 1
      bw = $5 / $6 / 1e3 * f
      if (name != want) { print want ": collective column " $1; bad = 1 }
      if (($7 - bw) / bw > 1e-4 || (bw - $7) / bw > 1e-4) {
        printf "%s %s %d B: busbw %s, bytes / us x %.4f gives %.6g\n", $1, $4, $5, $7, f, bw; bad = 1 }
      us[$5, $4] = $6; algos[$4] = 1; best[$5] = $8; tuner[$5] = $9; sizes[$5] = 1; rows++ }
    END {
      for (b in sizes) {
        lo = -1
        for (a in algos) if ((b, a) in us && (lo < 0 || us[b, a] < lo)) lo = us[b, a]
        k = split(best[b], named, "|"); m = 0
        for (a in algos) if ((b, a) in us && us[b, a] == lo) m++
        for (i = 1; i <= k; i++) if (!((b, named[i]) in us) || us[b, named[i]] != lo) m = -1
        if (m != k) { print want " " b " B: best \"" best[b] "\" is not the set of the fastest"; bad = 1 }
        if (!((b, tuner[b]) in us)) { print want " " b " B: the tuner picked " tuner[b] ", no row"; bad = 1 }
      }
      if (rows < 2) { print want ": " rows + 0 " rows"; bad = 1 }
      exit bad
    }' "$tmp/$c.csv" || { echo "FAIL: chorus-sim -c $c"; exit 1; }
done
echo "every collective: busbw factors, best and tuner columns consistent"
