#!/usr/bin/env bash
# Sanitizer runs, each in its own build dir (CHORUS_SANITIZE, top CMakeLists.txt):
#   tests/sanitize.sh [asan|tsan|all]
# asan: ASan + UBSan; the unit tests, the security tests and a few multi-process tests.
# tsan: TSan; the store, tcp and security unit tests and one small job per transport.
# Any report fails the run (UBSan does not recover; TSan exits 66). Prints each phase's time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${CHORUS_SANITIZE_JOBS:-2}
common=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCHORUS_BUILD_PERF=OFF -DCHORUS_WITH_CUDA=OFF)
targets=(chorus_unit_tests chorus_security_tests chorus_stranger_test chorus-run
         chorus_collectives_test chorus_kill_test)

phase() {  # name, command...
  local name=$1 start=$SECONDS
  shift
  echo "== $name"
  "$@"
  echo "== $name: $((SECONDS - start)) s"
}

run_asan() {
  local b=${CHORUS_ASAN_BUILD:-$root/build-asan}
  phase "asan: configure + build" bash -c "cmake -S '$root' -B '$b' ${common[*]} \
    -DCHORUS_SANITIZE=address,undefined >/dev/null && cmake --build '$b' -j$jobs --target ${targets[*]}"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
  phase "asan: unit + security" ctest --test-dir "$b" -L "unit|security" -E schedule --output-on-failure -j1
  phase "asan: multiproc" ctest --test-dir "$b" -L multiproc --output-on-failure \
    -R "collectives\.(shm|tcp)\.np3$|kill"
}

run_tsan() {
  local b=${CHORUS_TSAN_BUILD:-$root/build-tsan}
  phase "tsan: configure + build" bash -c "cmake -S '$root' -B '$b' ${common[*]} \
    -DCHORUS_SANITIZE=thread >/dev/null && cmake --build '$b' -j$jobs --target ${targets[*]}"
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  phase "tsan: unit (store, tcp, security)" ctest --test-dir "$b" --output-on-failure \
    -R "TcpStore|TcpTransport|Bootstrap|security\." -j1
  phase "tsan: multiproc" ctest --test-dir "$b" -L multiproc --output-on-failure \
    -R "collectives\.(shm|tcp)\.np2$"
}

case ${1:-all} in
  asan) run_asan ;;
  tsan) run_tsan ;;
  all) run_asan; run_tsan ;;
  *) sed -n '2,6p' "$0"; exit 2 ;;
esac
