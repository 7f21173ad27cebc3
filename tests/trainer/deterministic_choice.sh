#!/bin/sh
# CHORUS_DETERMINISTIC=1 (and Options::deterministic) keep a tune file, the probe and the
# cost model out of the algorithm choice: the fixed thresholds decide. The control run
# shows that the same tune file does sway the choice without it.
#   deterministic_choice.sh CHORUS_RUN PROGRAM
set -u
run=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# Claims rd measured fastest at every size on 4 ranks.
echo "shm ranks=4 latency_us=1 overhead_us=0.1 bytes_per_us=5000 copy_bytes_per_us=5000 reduce_bytes_per_us=5000 best=4:rd,65536:rd,16777216:rd" >"$dir/tune"
export CHORUS_TRANSPORT=shm
CHORUS_TUNE_FILE="$dir/tune" "$run" -n 4 --timeout 60 "$prog" rd || fail "the tune file did not decide (control)"
CHORUS_DETERMINISTIC=1 CHORUS_TUNE_FILE="$dir/tune" "$run" -n 4 --timeout 60 "$prog" static ||
  fail "CHORUS_DETERMINISTIC=1: the tune file still decided"
CHORUS_TUNE_FILE="$dir/tune" "$run" -n 4 --timeout 60 "$prog" static options ||
  fail "Options::deterministic: the tune file still decided"
# The probe and cost model are out too: static choices without any file.
CHORUS_DETERMINISTIC=1 "$run" -n 3 --timeout 60 "$prog" static || fail "CHORUS_DETERMINISTIC=1 on 3 ranks"
# 2 ranks: 16 KiB (the whole read limit, the slot's capacity) through the mailbox.
CHORUS_DETERMINISTIC=1 "$run" -n 2 --timeout 60 "$prog" static || fail "CHORUS_DETERMINISTIC=1 on 2 ranks"
# 10 ranks: 1 KiB still through the mailbox, 2 KiB (9 peers' 18 KiB) not.
CHORUS_DETERMINISTIC=1 "$run" -n 10 --timeout 60 "$prog" static || fail "CHORUS_DETERMINISTIC=1 on 10 ranks"
echo "PASS: deterministic algorithm choice"
