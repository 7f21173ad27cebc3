#!/usr/bin/env bash
# Installs Chorus into a temporary prefix, builds examples/consumer against it (CMake
# package and pkg-config) and runs both programs on 3 ranks.
set -euo pipefail
build=$1
source_dir=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/x86_64-linux-gnu/pkgconfig"
cmake -S "$source_dir/examples/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" -j 2 >/dev/null
export LD_LIBRARY_PATH="$work/prefix/lib:$work/prefix/lib/x86_64-linux-gnu"
"$work/prefix/bin/chorus-run" -n 3 "$work/consumer/allreduce_cpp"
"$work/prefix/bin/chorus-run" -n 3 "$work/consumer/allreduce_c"
