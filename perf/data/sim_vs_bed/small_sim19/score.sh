# score.sh FILE: guard failures, and small sums
awk '{ split($3, a, "/"); g=$NF; sub(/\)/, "", g); split(g, m, "/"); if ($1 ~ /small/) { if ($2=="3x2") s3+=a[1]; else s2+=a[1]; sp+=$4; st+=$5 } else { if (a[1] < m[1] || $5 < m[2]) { bad++; print "  FAIL", $1, $2, $3, $5, "guard", g }; w+=a[1]; p+=$5 } }
  END { printf "guarded within %d picks %d fails %d | small 3x2 %d 2x2 %d (=measured %d, =tuner %d)\n", w, p, bad+0, s3, s2, sp, st }' "$1"
