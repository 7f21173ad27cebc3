# Sourced by tests/sanitize.sh and tests/fuzz/run_fuzz.sh: one build of an instrumented tree
# at a time. tests/prebuild.sh builds the trees in the background while the other tests run,
# and a `*.build` test that reaches a tree being built waits for it, then finds it up to
# date. The lock is held by this shell (and the compilers it starts) until it exits.
#   take_tree_lock DIR   waits at most CHORUS_TREE_LOCK_WAIT seconds (default 1500)
take_tree_lock() {
  local dir=$1 wait=${CHORUS_TREE_LOCK_WAIT:-1500}
  mkdir -p "$(dirname "$dir")"
  exec {tree_lock_fd}>"$dir.lock"
  if ! flock -n "$tree_lock_fd"; then
    echo "waiting for the build of $dir that holds $dir.lock (at most ${wait} s)"
    flock -w "$wait" "$tree_lock_fd" ||
      { echo "$dir.lock still held after ${wait} s: is a build of that tree stuck?" >&2; exit 1; }
  fi
}
