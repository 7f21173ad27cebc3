#!/usr/bin/env bash
# libFuzzer harnesses (tests/fuzz/*_fuzz.cpp) in their own clang build, with ASan + UBSan:
#   tests/fuzz/run_fuzz.sh [-B build-dir] build             configure + build every harness
#   tests/fuzz/run_fuzz.sh [-B build-dir] run NAME runs=N   one harness from its seed corpus:
#                                                           N inputs, seed 1 (what CI runs)
#   tests/fuzz/run_fuzz.sh [-B build-dir] run NAME SECONDS  the same for SECONDS, random seed
#   tests/fuzz/run_fuzz.sh [-B build-dir] all SECONDS       build, then every harness (soak)
# CI is repeatable: the seed corpus, then a fixed number of inputs mutated from seed 1.
# Timed runs with fresh seeds explore further; run them by hand (`all 600`) before
# closing work on a parser. A run fails on a crash, a sanitizer report or a leak; it prints
# the executions done.
# New inputs go to a scratch corpus (the seeds in tests/fuzz/corpus stay as they are);
# crashing inputs are kept in BUILD/artifacts.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build-fuzz
if [[ ${1:-} == -B ]]; then build=$2; shift 2; fi
source "$root/tests/tree_lock.sh"

configure_and_build() {
  take_tree_lock "$build"
  local cxx=${CHORUS_FUZZ_CXX:-clang++} cc=${CHORUS_FUZZ_CC:-clang}
  command -v "$cxx" >/dev/null || { echo "run_fuzz: $cxx not found (apt-get install clang libclang-rt-14-dev)"; exit 1; }
  # -O1 -g1: line tables suffice for the reports, and the build stays short in CI.
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1" \
    -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_C_COMPILER="$cc" -DCHORUS_SANITIZE=address,undefined -DCHORUS_FUZZ=ON \
    -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link -DCHORUS_BUILD_PERF=OFF -DCHORUS_WITH_CUDA=OFF \
    -DCHORUS_WITH_MPI=OFF -DCHORUS_WITH_UCX=OFF -DCHORUS_WITH_VERBS=OFF -DCHORUS_UNITY_LIBRARY=ON >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; exit 1; }
  cmake --build "$build" -j"${CHORUS_FUZZ_JOBS:-2}" --target chorus_fuzzers
}

run_one() {  # NAME runs=N | NAME SECONDS
  local name=$1 budget=$2 bin=$build/tests/${1}_fuzz limit
  if [[ $budget == runs=* ]]; then
    limit=(-runs="${budget#runs=}" -seed=1)
  else
    limit=(-max_total_time="$budget")
  fi
  [[ -x $bin ]] || { echo "run_fuzz: $bin is not built (run_fuzz.sh build)"; exit 1; }
  local work log
  work=$(mktemp -d) log=$(mktemp)
  trap 'rm -rf "$work" "$log"' RETURN
  mkdir -p "$build/artifacts"
  local rc=0
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$bin" "${limit[@]}" -max_len=4096 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$name-" "$work" "$here/corpus/$name" >"$log" 2>&1 || rc=$?
  local execs seed
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  seed=$(sed -n 's/^INFO: Seed: *//p' "$log" | head -1)  # to rerun a timed run: -seed=
  if ((rc != 0)); then
    tail -60 "$log"
    echo "fuzz $name: FAILED (exit $rc) after ${execs:-?} executions, seed ${seed:-?}; input in $build/artifacts"
    return 1
  fi
  echo "fuzz $name: ${execs:-?} executions ($budget), seed ${seed:-?}, no crash ($(ls "$work" | wc -l) new inputs)"
}

case ${1:-} in
  build) configure_and_build ;;
  run) run_one "$2" "$3" ;;
  all)
    configure_and_build
    status=0
    for src in "$here"/*_fuzz.cpp; do
      n=$(basename "$src" _fuzz.cpp)
      run_one "$n" "$2" || status=1
    done
    exit $status
    ;;
  *) sed -n '2,13p' "$0"; exit 2 ;;
esac
