#!/bin/bash
# A/B: base (main's chorus-sim, fixed shares) vs new (fluid), alternating per run.
cd /work/wt/sim7
out=/tmp/sim7/scale_ab; mkdir -p $out
F=${F:-meta-roce}
for N in 16384 100000; do
  for A in ring rd rhd hier hier_rd hier_rhd; do
    for v in base new; do
      if [ $v = base ]; then bin="env LD_LIBRARY_PATH=/tmp/sim7/base /tmp/sim7/base/chorus-sim"; else bin="env LD_LIBRARY_PATH=/tmp/sim7/new /tmp/sim7/new/chorus-sim"; fi
      load=$(cut -d' ' -f1 /proc/loadavg)
      /usr/bin/time -f "%e %U %S %M" -o $out/$v.$F.$N.$A.time timeout 300 $bin --fabric $F --gpus $N -A $A -b 64K -e 64M -f 1024 --no-tuner > $out/$v.$F.$N.$A.out 2>&1
      t=$(grep -v '^#' $out/$v.$F.$N.$A.out | awk '{printf "%s ", $6}')
      cpu=$(grep "^# $A: " $out/$v.$F.$N.$A.out | awk '{print $3}')
      echo "$v $F $N $A $(cat $out/$v.$F.$N.$A.time | awk '{printf "wall=%s user=%s sys=%s rss_kb=%s", $1,$2,$3,$4}') algcpu=$cpu load=$load us=$t"
    done
  done
done
