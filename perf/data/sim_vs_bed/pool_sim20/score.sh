#!/usr/bin/env bash
# score.sh FILE...: per rescore file, the guarded entries' within-25% and picks summed (and
# how many entries fall below the guard), the 3x2 guarded entries' within-25%, and the small
# recordings' within-25% per layout (small_sim19/score.sh counted small_sim19/rec/, a
# guarded entry, among the small ones).
for f in "$@"; do
  awk -v file="$f" '{ split($3, a, "/"); g=$NF; sub(/\)/, "", g); split(g, m, "/")
    if ($1 ~ /rec_small/) { if ($2=="3x2") s3+=a[1]; else s2+=a[1] }
    else { if (a[1] < m[1] || $5 < m[2]) bad++; w+=a[1]; n+=a[2]; p+=$5; if ($2=="3x2") { w3+=a[1]; n3+=a[2] } } }
    END { printf "%s: guarded within %d of %d (3x2 %d of %d), picks %d, entries below the guard %d | small within 3x2 %d, 2x2 %d of 192 each\n", file, w, n, w3, n3, p, bad+0, s3, s2 }' "$f"
done
