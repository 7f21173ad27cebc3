#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (as root):
#   tools/quickstart.sh perf   install what is missing, build, run chorus-perf all-reduce on 4 ranks
#   tools/quickstart.sh test   install what is missing, build, run the whole test suite (CTest)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-perf}
build=${CHORUS_BUILD_DIR:-build}

packages=(g++ cmake make pkg-config libgtest-dev libbenchmark-dev libhwloc-dev hwloc
          openmpi-bin libopenmpi-dev iproute2 libucx-dev ucx-utils
          libibverbs-dev librdmacm-dev rdma-core ibverbs-providers ibverbs-utils perftest
          qemu-system-x86 busybox-static clang libclang-rt-14-dev
          nlohmann-json3-dev dpkg-dev libssl-dev zlib1g-dev
          libopenblas-dev python3-sklearn
          pybind11-dev python3-dev python3-numpy python3-torch libtorch-dev
          python3-matplotlib)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "quickstart: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
echo "quickstart: building in $build (log: $build.build.log)"
cmake --build "$build" -j "$(nproc)" >"$build.build.log" 2>&1 ||
  { tail -n 60 "$build.build.log"; exit 1; }

case "$mode" in
  perf)
    exec "$build/tools/chorus-run" -n 4 "$build/perf/chorus-perf" -b 8 -e 64M -f 4 ;;
  test)
    # The instrumented trees (labels fuzz, asan, tsan) build at idle priority while the
    # other tests run; their tests come last and wait for them (tests/prebuild.sh).
    tests/prebuild.sh "$build" &
    cd "$build"
    exec ctest --output-on-failure --no-tests=error --timeout 900 ;;
  *)
    echo "usage: $0 perf|test" >&2
    exit 2 ;;
esac
