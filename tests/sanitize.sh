#!/usr/bin/env bash
# Sanitizer runs, each in its own build dir (CHORUS_SANITIZE, top CMakeLists.txt). The test
# command runs them through CTest (labels asan and tsan, tests/sanitizers.cmake):
#   tests/sanitize.sh [-B dir] build asan|tsan      configure + build the instrumented targets
#   tests/sanitize.sh [-B dir] run asan|tsan PHASE  one phase: unit | multiproc
#   tests/sanitize.sh all                           both builds, every phase (by hand)
# asan: ASan + UBSan (no recovery). tsan: ThreadSanitizer. Any report fails the run: the
# instrumented process exits non-zero and every test checks every rank's exit status.
# No suppressions. hwloc's PCI discovery is off under the sanitizers (see sanitizer_env).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=
if [[ ${1:-} == -B ]]; then dir=$2; shift 2; fi
jobs=${CHORUS_SANITIZE_JOBS:-2}
source "$root/tests/tree_lock.sh"
# -O1 -g1: line tables are enough for the reports, and the two builds stay short in CI.
# CHORUS_MP_FULL_RANKS_*=0: the collective suites run --quick there (every type x op x
# count still, the large count only for a few pairs): the threads and the engine are the
# same at any size, and the full matrix runs uninstrumented in the main tree.
common=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1"
        "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1" -DCHORUS_BUILD_PERF=OFF -DCHORUS_WITH_CUDA=OFF
        -DCHORUS_BUILD_PYTHON=OFF -DCHORUS_SANITIZER_TESTS=OFF -DCHORUS_MP_FULL_RANKS_SHM=0
        -DCHORUS_MP_FULL_RANKS_TCP=0 -DCHORUS_MP_FULL_RANKS_UCX=0 -DCHORUS_UNITY_LIBRARY=ON)
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
  # hwloc's PCI discovery (its pci plugin, libpciaccess) reads pci.ids through a realloc
  # per line, which the sanitizers' allocators copy every time: a topology detection took
  # 12-25 s instead of 0.1 (every rank's tuning setup runs one), and the plugin's
  # allocations were the only leaks LSan reported. PCI objects (NIC locality) stay covered
  # here by the recorded hwloc XML tests and uninstrumented by the main tree.
  export HWLOC_COMPONENTS=-pci
  case $1 in
    asan)
      export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
      export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ;;
    tsan)
      export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:exitcode=66 ;;
  esac
}

build() {  # asan|tsan
  take_tree_lock "$dir"
  local flags=address,undefined
  [[ $1 == tsan ]] && flags=thread
  cmake -S "$root" -B "$dir" "${common[@]}" -DCHORUS_SANITIZE=$flags >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; exit 1; }
  cmake --build "$dir" -j"$jobs" --target "${targets[@]}" >"$dir.build.log" 2>&1 ||
    { tail -n 60 "$dir.build.log"; exit 1; }
  echo "sanitize: $1 build ready in $dir"
}

# The unit phase: the tests of labels unit and security but the schedule proofs, the
# cost-model fit (Fit.*: a single-threaded numeric fit, thousands of replays, no memory or
# thread use of interest; 132 s under ASan) and chorus-info's output check. The gtest
# binaries run once each, every test in one process (an instrumented process takes ~0.3 s
# to start: one per test was most of the phase's 160 s); the other tests through CTest.
unit_exclude='schedule|Schedule\.|chorus_info_output|^Fit\.'
unit_gtest_filter='-Schedule.*:Fit.*'
# Under TSan also the tests of code that starts no thread and shares no memory: the
# reduction kernels, the half-precision formats and the topology parser's loop over mangled
# files (29 of the binary's 67 s there, with nothing TSan could report). ASan keeps them.
tsan_unit_gtest_exclude=':*KernelsTest.*:Formats/HalfTest.*:TopologyFileTest.NeverCrashes'
unit_binaries=(chorus_unit_tests chorus_security_tests)

run_unit() {
  local bin status=0
  for bin in "${unit_binaries[@]}"; do
    echo "sanitize: $dir/tests/$bin --gtest_filter=$unit_gtest_filter"
    "$dir/tests/$bin" "--gtest_filter=$unit_gtest_filter" || status=1
  done
  # The rest: tests of the selection whose command is not one of the binaries above.
  local others
  others=$(ctest --test-dir "$dir" --show-only=json-v1 -L "unit|security" -E "$unit_exclude" |
    python3 -c 'import json, re, sys
bins = set(sys.argv[1:])
names = [t["name"] for t in json.load(sys.stdin)["tests"]
         if t.get("command") and t["command"][0].rsplit("/", 1)[-1] not in bins]
print("|".join("^" + re.escape(n) + "$" for n in names))' "${unit_binaries[@]}")
  [[ -n $others ]] || { echo "sanitize: no other unit tests found (broken selection)" >&2; exit 1; }
  ctest --test-dir "$dir" -R "$others" --output-on-failure --no-tests=error -j1 --timeout 600 ||
    status=1
  return $status
}

run() {  # asan|tsan unit|multiproc
  sanitizer_env "$1"
  local select
  case $2 in
    unit)
      [[ $1 == tsan ]] && unit_gtest_filter+=$tsan_unit_gtest_exclude
      run_unit; return ;;
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
