#!/usr/bin/env bash
# DIR: per size, out-of-place (and in-place) us of old_1..N and new_1..N, medians, ratio new/old.
d=$1
for s in $(awk '/^ +[0-9]+ +[0-9]+ +float/ {print $1}' $d/small_np2_tcp_old_1.txt); do
  for w in old new; do
    for k in 6 10; do
      v=$(for f in $d/small_np2_tcp_${w}_*.txt; do awk -v s=$s -v k=$k '$1==s && $3=="float" {print $k}' $f; done | sort -n | tr '\n' ' ')
      eval "${w}_$k=\"$v\""
    done
  done
  med() { echo $1 | tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
  mo=$(med "$old_6"); mn=$(med "$new_6"); io=$(med "$old_10"); in=$(med "$new_10")
  printf "%8s  oop old %-22s new %-22s ratio %.2f | inplace old %-22s new %-22s ratio %.2f\n" $s "$old_6" "$new_6" $(echo "$mn/$mo" | bc -l) "$old_10" "$new_10" $(echo "$in/$io" | bc -l)
done
