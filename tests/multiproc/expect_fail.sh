#!/bin/sh
# expect_fail.sh MAX_SECONDS PATTERN COMMAND...: passes if COMMAND exits non-zero within
# MAX_SECONDS and its output contains PATTERN (case-insensitive), e.g. a launcher that
# must report which rank failed.
max="$1"
pattern="$2"
shift 2
out=$(mktemp)
start=$(date +%s)
"$@" >"$out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$out"
status=0
if [ "$rc" -eq 0 ]; then
  echo "FAIL: '$*' exited 0, expected a failure"
  status=1
fi
if ! grep -qi -- "$pattern" "$out"; then
  echo "FAIL: the output does not contain '$pattern'"
  status=1
fi
if [ "$elapsed" -gt "$max" ]; then
  echo "FAIL: took ${elapsed}s, limit ${max}s"
  status=1
fi
rm -f "$out"
[ "$status" -eq 0 ] && echo "PASS: exit status $rc in ${elapsed}s, output names '$pattern'"
exit "$status"
