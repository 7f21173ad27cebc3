#!/bin/sh
# The tuner end to end: chorus-perf --calibrate writes a tune file, a run with
# CHORUS_TUNE_FILE uses it (and its results check out), a malformed file is refused with
# its line number, CHORUS_TUNE_PROBE=0 keeps the defaults, the probe runs over tcp, and
# CHORUS_TUNER=static still gives right results.
#   tune_file_test.sh CHORUS_RUN CHORUS_PERF
set -eu
run=$1 perf=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
small="-b 8 -e 256K -f 32 -c 1 -n 2 -w 1"
fail() { echo "FAIL: $*"; cat "$dir/log" 2>/dev/null | tail -30; exit 1; }

"$run" -n 3 --timeout 120 "$perf" --calibrate "$dir/tune" >"$dir/log" 2>&1 || fail "calibrate"
grep -q '^shm ranks=3 latency_us=' "$dir/tune" || fail "no shm ranks=3 entry in the tune file"
grep -q 'fit: rms error' "$dir/log" || fail "calibrate printed no fit"

CHORUS_TUNE_FILE="$dir/tune" CHORUS_DEBUG=INFO "$run" -n 3 --timeout 120 "$perf" $small \
  >"$dir/log" 2>&1 || fail "run with the tune file"
grep -q "tuning ($dir/tune (3 ranks))" "$dir/log" || fail "the tune file was not used"
grep -q 'algorithm [a-z_]*; cost model' "$dir/log" || fail "no choice logged"

printf 'shm ranks=3 latency_us=1\nshm latency_us=oops\n' >"$dir/bad"
if CHORUS_TUNE_FILE="$dir/bad" "$run" -n 2 --timeout 60 "$perf" $small >"$dir/log" 2>&1; then
  fail "a malformed tune file was accepted"
fi
grep -q "$dir/bad:2:" "$dir/log" || fail "the error does not name the bad line"

CHORUS_TUNE_PROBE=0 CHORUS_DEBUG=INFO "$run" -n 2 --timeout 60 "$perf" $small \
  >"$dir/log" 2>&1 || fail "run without the probe"
grep -q 'tuning (defaults)' "$dir/log" || fail "CHORUS_TUNE_PROBE=0 did not keep the defaults"

CHORUS_TRANSPORT=tcp CHORUS_DEBUG=INFO "$run" -n 3 --timeout 60 "$perf" $small \
  >"$dir/log" 2>&1 || fail "tcp run with the probe"
grep -q 'tuning (probe): tcp ranks=3' "$dir/log" || fail "no tcp probe"

CHORUS_TUNER=static "$run" -n 5 --timeout 60 "$perf" $small >"$dir/log" 2>&1 ||
  fail "CHORUS_TUNER=static"
echo "tune file test passed"
