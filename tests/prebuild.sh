#!/usr/bin/env bash
# Builds the instrumented trees (the tests fuzz.build, asan.build, tsan.build) in the
# background at idle priority while CTest runs the other tests, which leave about one of two
# cores idle on average. `tools/quickstart.sh test` starts it; the `*.build` tests run last
# (tests/instrumented/) and, through each tree's lock (tests/tree_lock.sh), wait for a build
# in progress and then find the tree up to date. The commands are the tests' own, read from
# CTest, so the trees are the ones the tests would build.
#   tests/prebuild.sh BUILD_DIR      (logs to BUILD_DIR/prebuild.log)
# SCHED_IDLE (or nice 19 where that is refused) and the idle I/O class: a test that wants a
# core takes it from a compiler at once. A tree whose lock is already taken (its test got
# there first) is left alone.
set -uo pipefail
# A process group of its own, so that its builds stop together, in the test command's session:
# a session of its own (setsid) is a scheduler autogroup of its own, and the kernel shares the
# CPU fairly between autogroups whatever their tasks' policy, so the idle-priority builds took
# half the cores (schedule_proofs ran 2.3x and the bed's collectives 2x slower beside them).
[[ $(cut -d' ' -f5 /proc/$$/stat) == "$$" ]] ||
  exec python3 -c 'import os, sys; os.setpgid(0, 0); os.execv(sys.argv[1], sys.argv[1:])' "$0" "$@"
build=$(cd "${1:?usage: prebuild.sh BUILD_DIR}" && pwd)
exec >"$build/prebuild.log" 2>&1 </dev/null
if ! chrt --idle -p 0 $$ 2>/dev/null; then
  renice -n 19 -p $$ >/dev/null || true
fi
ionice -c 3 -p $$ 2>/dev/null || true
# Stop with the test command: its parent (quickstart.sh, which then becomes ctest) gone, the
# builds in this process group are stopped too (an interrupted ctest leaves nothing behind).
parent=$PPID
( while kill -0 "$parent" 2>/dev/null; do sleep 2; done
  echo "prebuild: the test command (pid $parent) has ended: stopping the builds"
  kill -TERM -- -$$ ) &
watcher=$!

mapfile -t tests < <(ctest --test-dir "$build" --show-only=json-v1 -R '^(fuzz|asan|tsan)\.build$' |
  python3 -c 'import json, shlex, sys
for t in json.load(sys.stdin)["tests"]:
    wd = next((p["value"] for p in t.get("properties", []) if p["name"] == "WORKING_DIRECTORY"), ".")
    print(t["name"], shlex.quote(wd), " ".join(shlex.quote(a) for a in t["command"]))')
echo "prebuild: ${#tests[@]} trees: $(printf '%s ' "${tests[@]%% *}")"
for line in "${tests[@]}"; do
  name=${line%% *}
  start=$SECONDS
  # Wait 0 s for the tree's lock: a test that holds it builds the tree itself.
  (eval "set -- ${line#* }"; cd "$1" && shift && CHORUS_TREE_LOCK_WAIT=0 "$@")
  echo "prebuild: $name exited $? after $((SECONDS - start)) s"
done
kill "$watcher" 2>/dev/null
