#!/usr/bin/env bash
# chorus-sim's own tuner (the tuner's two classes from tunerLinks, through the same replay)
# against chorus-sim's fastest (the fabric's), on every guarded recording's fabric, 64 KiB-
# 64 MiB, without and with the core pool:  tuner_agreement.sh CHORUS_SIM
set -u
sim=$1 root=$(cd "$(dirname "$0")/../../../.." && pwd)
want=$(sed -n '/^want="/,/"$/p' "$root/tests/sim/bed_agreement_test.sh" | tr -d '"' | sed 's/^want=//')
for pool in 0 1 2; do
  tot=0 agree=0
  for w in $want; do
    IFS=: read -r dir layout min picks <<<"$w"
    t=$(mktemp -d)
    cp "$root/perf/data/$dir/bed_$layout".* "$t/"
    if [[ $pool != 0 && ! -f $t/bed_$layout.log ]]; then
      echo "core_pool 1" >>"$t/bed_$layout.fabric"
      [[ $pool == 2 ]] && echo "pool_overhead_at_call_share 1" >>"$t/bed_$layout.fabric"
    fi
    CORE_POOL=$pool SIM=$sim "$root/perf/sim_vs_bed.sh" --compare "$t" "$layout" >/dev/null
    read -r n a < <("$sim" --fabric-file "$t/bed_$layout.fabric" -b 64K -e 64M -f 4 2>&1 | awk '
      /size \(B\)  best/ { on = 1; next }
      on && /^ +[0-9]/ { n++; split($2, s, "|"); ok = 0; for (i in s) if (s[i] == $3) ok = 1; a += ok }
      END { print n + 0, a + 0 }')
    rm -rf "$t"
    tot=$((tot + n)) agree=$((agree + a))
  done
  echo "CORE_POOL=$pool: chorus-sim's tuner = its fastest at $agree of $tot sizes"
done
