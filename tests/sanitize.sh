#!/usr/bin/env bash
# Sanitizer runs, each in its own build dir (CHORUS_SANITIZE, top CMakeLists.txt). The test
# command runs them through CTest (labels asan and tsan, tests/sanitizers.cmake):
#   tests/sanitize.sh [-B dir] build asan|tsan      configure + build the instrumented targets
#   tests/sanitize.sh [-B dir] run asan|tsan PHASE  one phase: unit | multiproc
#   tests/sanitize.sh all                           both builds, every phase (by hand)
# asan: ASan + UBSan (no recovery). tsan: ThreadSanitizer. Any report fails the run: the
# instrumented process exits non-zero and every test checks every rank's exit status.
# The only suppression is tests/sanitizers/lsan.supp (leaks inside hwloc's plugins).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=
if [[ ${1:-} == -B ]]; then dir=$2; shift 2; fi
jobs=${CHORUS_SANITIZE_JOBS:-2}
# -O1 -g1: line tables are enough for the reports, and the two builds stay short in CI.
# CHORUS_MP_FULL_RANKS_*=0: the collective suites run --quick there (every type x op x
# count still, the large count only for a few pairs): the threads and the engine are the
# same at any size, and the full matrix runs uninstrumented in the main tree.
common=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1"
        "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1" -DCHORUS_BUILD_PERF=OFF -DCHORUS_WITH_CUDA=OFF
        -DCHORUS_BUILD_PYTHON=OFF -DCHORUS_SANITIZER_TESTS=OFF -DCHORUS_MP_FULL_RANKS_SHM=0
        -DCHORUS_MP_FULL_RANKS_TCP=0 -DCHORUS_MP_FULL_RANKS_UCX=0)
targets=(chorus_unit_tests chorus_security_tests chorus_stranger_test chorus-run
         chorus_collectives_test chorus_kill_test chorus_mismatch_test chorus_recovery_test
         chorus_errors_test chorus_exit_helper chorus-info)

# Multi-process tests per sanitizer: every transport, a crash, a mismatch, abort from
# another thread (the race TSan is for), shrink and the non-blocking API. Sized for CI.
asan_multiproc='^multiproc\.collectives\.(shm|tcp)\.np(1|3)$|^multiproc\.collectives\.shm\.np5\.allreduce_rd|^multiproc\.kill\.(shm|tcp)\.np4\.victim2$|^fault\.(mismatch\.count|shrink|abort_from_thread|diagnosis\.absent_rank)\.shm$|^multiproc\.c_api\.nonblocking$|^multiproc\.errors\.(cpp|c)\.np2$|^ucx\.collectives\.np3$'
tsan_multiproc='^multiproc\.collectives\.(shm|tcp)\.np2$|^fault\.(shrink|abort_from_thread)\.(shm|tcp)$|^multiproc\.kill\.(shm|tcp)\.np(4\.victim2|3\.victim1)$|^multiproc\.c_api\.nonblocking$|^multiproc\.errors\.cpp\.np2$|^ucx\.collectives\.np2$'
# Under tsan: abort_from_thread (Engine::abort against poll, the reason under a mutex)
# and the kill tests (libcrypto is initialised when libchorus loads, so its exit handler
# runs after the process store's server thread has been joined: security/crypto.cpp).

sanitizer_env() {
  # UCX's memory hooks (libucm) patch madvise/mmap and crash inside TSan's interceptors
  # when a thread exits; Chorus does not rely on UCX memory events, so they are off.
  export UCX_MEM_EVENTS=no
  export CHORUS_TIMEOUT=${CHORUS_TIMEOUT:-120}
  case $1 in
    asan)
      # fast_unwind_on_malloc=0: hwloc's plugins have no frame pointers, and only the full
      # unwinder reaches hwloc_topology_load, which the suppression names.
      export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0
      export LSAN_OPTIONS=suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0
      export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ;;
    tsan)
      export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:exitcode=66 ;;
  esac
}

build() {  # asan|tsan
  local flags=address,undefined
  [[ $1 == tsan ]] && flags=thread
  cmake -S "$root" -B "$dir" "${common[@]}" -DCHORUS_SANITIZE=$flags >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; exit 1; }
  cmake --build "$dir" -j"$jobs" --target "${targets[@]}" >"$dir.build.log" 2>&1 ||
    { tail -n 60 "$dir.build.log"; exit 1; }
  echo "sanitize: $1 build ready in $dir"
}

run() {  # asan|tsan unit|multiproc
  sanitizer_env "$1"
  local select
  case $2 in
    # Fit.*: a single-threaded numeric fit of the cost model (thousands of replays, no
    # memory or thread use of interest) took 132 s under ASan, a third of the phase.
    unit) select=(-L "unit|security" -E "schedule|Schedule\.|chorus_info_output|^Fit\.") ;;
    multiproc)
      local re=$asan_multiproc
      [[ $1 == tsan ]] && re=$tsan_multiproc
      select=(-R "$re") ;;
    *) echo "sanitize: unknown phase $2" >&2; exit 2 ;;
  esac
  # --no-tests=error: a selection that matches nothing is a broken test, not a pass.
  ctest --test-dir "$dir" "${select[@]}" --output-on-failure --no-tests=error -j1 --timeout 600
}

case ${1:-all} in
  build) dir=${dir:-$root/build-$2}; build "$2" ;;
  run) dir=${dir:-$root/build-$2}; run "$2" "$3" ;;
  all)
    for s in asan tsan; do
      dir=$root/build-$s
      build $s
      for p in unit multiproc; do (run $s $p); done
    done ;;
  *) sed -n '2,9p' "$0"; exit 2 ;;
esac
