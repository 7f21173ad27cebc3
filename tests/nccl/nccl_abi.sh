#!/usr/bin/env bash
# The nccl-abi tests on an INSTALLED Chorus: programs written against nccl.h alone, built
# with -lnccl through the installed nccl.pc (or find_package(NCCL)), no LD_LIBRARY_PATH.
#
#   nccl_abi.sh install BUILD WORK SRC     install into WORK/prefix, build the programs,
#                                          check the libraries, symbols and header
#   nccl_abi.sh run WORK LAUNCHER N [ARGS] run the checks on N ranks (chorus-run|mpirun)
#   nccl_abi.sh kill WORK N                a killed rank: every survivor sees ncclRemoteError
#   nccl_abi.sh initall WORK [static]      ncclCommInitAll, 4 ranks in one process
#   nccl_abi.sh cmake WORK SRC             a consumer through find_package(NCCL)
set -euo pipefail
unset LD_LIBRARY_PATH
mode=$1
work=${3:-}
[[ $mode == install ]] || work=$2
prefix=$work/prefix
cc=${CC:-cc}

# A free loopback port for NCCL_COMM_ID (ports derived from our pid, probed), below the
# kernel's ephemeral range (32768 and up here): a port there can be taken by any outgoing
# connection between the probe and the bind (seen: "bind ... Address already in use" when
# tests ran in parallel).
free_port() {
  local port low
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  for ((k = 0; k < 200; ++k)); do
    port=$((20000 + ($$ * 131 + k * 7919) % (low - 20000)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
  done
  echo "no free port" >&2; exit 1
}

case $mode in
install)
  build=$2 src=$4
  rm -rf "$work"; mkdir -p "$work"
  cmake --install "$build" --prefix "$prefix" >/dev/null
  libdir=$(dirname "$(find "$prefix" -name nccl.pc)")/..
  libdir=$(cd "$libdir" && pwd)
  export PKG_CONFIG_PATH=$libdir/pkgconfig
  # The libraries, as NCCL ships them.
  [[ $(readlink "$libdir/libnccl.so") == libnccl.so.2 ]] || { echo "FAIL: libnccl.so -> libnccl.so.2"; exit 1; }
  readelf -d "$libdir/libnccl.so.2" | grep -q 'SONAME.*\[libnccl.so.2\]' || { echo "FAIL: SONAME"; exit 1; }
  [[ -f $libdir/libnccl_static.a ]] || { echo "FAIL: no libnccl_static.a"; exit 1; }
  [[ $(pkg-config --modversion nccl) == 2.26.0 ]] || { echo "FAIL: nccl.pc version"; exit 1; }
  symbols=$(nm -D --defined-only "$libdir/libnccl.so.2" | awk '{print $3}')
  for f in GetVersion GetUniqueId CommInitRank CommInitAll CommInitRankConfig \
      CommInitRankScalable CommSplit CommFinalize CommDestroy CommAbort CommGetAsyncError \
      CommCount CommCuDevice CommUserRank CommRegister CommDeregister MemAlloc MemFree \
      GetErrorString GetLastError GroupStart GroupEnd GroupSimulateEnd AllReduce AllGather \
      ReduceScatter Broadcast Bcast Reduce Send Recv RedOpCreatePreMulSum RedOpDestroy \
      AlltoAll Gather Scatter; do
    for name in nccl$f pnccl$f; do
      grep -qx "$name" <<<"$symbols" || { echo "FAIL: libnccl.so.2 does not export $name"; exit 1; }
    done
  done
  extra=$(grep -v '^p\?nccl' <<<"$symbols" || true)
  [[ -z $extra ]] || { echo "FAIL: libnccl.so.2 exports more than NCCL's names: $extra"; exit 1; }
  # The program, as a user builds it: pkg-config and -lnccl (run path: the installed lib).
  flags="-std=c11 -Wall -Wextra -Werror"
  # shellcheck disable=SC2046
  $cc $flags $(pkg-config --cflags nccl) "$src/tests/nccl/nccl_host_test.c" \
    $(pkg-config --libs nccl) -lm -Wl,-rpath,"$libdir" -o "$work/nccl_host_test"
  # shellcheck disable=SC2046
  $cc $flags $(pkg-config --cflags nccl) "$src/tests/nccl/nccl_host_test.c" \
    "$libdir/libnccl_static.a" -L"$libdir" -lchorus -lstdc++ -lm -Wl,-rpath,"$libdir" \
    -o "$work/nccl_host_test_static"
  # The header alone, in C and C++, with the CUDA headers present and without.
  echo '#include <nccl.h>
int main(void) { ncclConfig_t c = NCCL_CONFIG_INITIALIZER; cudaStream_t s = 0; (void)s; return c.blocking == NCCL_CONFIG_UNDEF_INT ? 0 : 1; }' >"$work/header.c"
  $cc $flags -pedantic -fsyntax-only -I"$prefix/include" "$work/header.c"
  ${CXX:-c++} -std=c++17 -Wall -Wextra -Werror -fsyntax-only -x c++ -I"$prefix/include" "$work/header.c"
  for cuda in /usr/local/cuda/include; do
    [[ -f $cuda/cuda_runtime.h ]] || continue
    echo '#include <cuda_runtime.h>' | cat - "$work/header.c" >"$work/header_cuda_first.c"
    for h in header.c header_cuda_first.c; do
      $cc -std=c11 -Wall -Werror -fsyntax-only -I"$prefix/include" -I"$cuda" "$work/$h"
      ${CXX:-c++} -std=c++17 -Wall -Werror -fsyntax-only -x c++ -I"$prefix/include" -I"$cuda" "$work/$h"
    done
  done
  echo "installed: libnccl.so.2, libnccl_static.a, nccl.pc, nccl.h; programs built"
  ;;
run)
  launcher=$3 n=$4
  shift 4
  export NCCL_COMM_ID=127.0.0.1:$(free_port)
  if [[ $launcher == mpirun ]]; then
    export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    mpirun --allow-run-as-root --oversubscribe -np "$n" -x NCCL_COMM_ID "$work/nccl_host_test" all "$@"
  else
    "$prefix/bin/chorus-run" -n "$n" "$work/nccl_host_test" all "$@"
  fi
  ;;
kill)
  n=$3
  export NCCL_COMM_ID=127.0.0.1:$(free_port)
  out=$(mktemp -d "$work/kill.XXXXXX")
  rc=0
  "$prefix/bin/chorus-run" -n "$n" "$work/nccl_host_test" kill "$out" || rc=$?
  survivors=$(find "$out" -name 'ok.*' | wc -l)
  if (( rc == 0 || survivors != n - 1 )); then
    echo "FAIL: chorus-run exited $rc, $survivors of $((n - 1)) survivors saw ncclRemoteError naming the victim"
    exit 1
  fi
  echo "kill: $survivors survivors saw ncclRemoteError naming rank $((n - 1))"
  ;;
initall)
  "$work/nccl_host_test${3:+_$3}" initall
  ;;
cmake)
  src=$3
  mkdir -p "$work/consumer"
  cat >"$work/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(nccl_consumer C)
find_package(NCCL 2.26 REQUIRED)
add_executable(nccl_host_test "$src/tests/nccl/nccl_host_test.c")
target_link_libraries(nccl_host_test PRIVATE NCCL::nccl m)
CMAKE
  cmake -S "$work/consumer" -B "$work/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_RPATH="$(dirname "$(find "$prefix" -name libnccl.so.2)")" >/dev/null
  cmake --build "$work/consumer/build" >/dev/null
  "$work/consumer/build/nccl_host_test" initall
  ;;
*)
  echo "usage: see the header of $0" >&2; exit 2
  ;;
esac
