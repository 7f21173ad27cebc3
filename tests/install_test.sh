#!/usr/bin/env bash
# Installs Chorus into a temporary prefix, builds examples/consumer against it (CMake
# package and pkg-config) and runs both programs on 3 ranks with the INSTALLED chorus-run.
# No LD_LIBRARY_PATH: installed programs must find libchorus.so through their run path
# ($ORIGIN/../lib), and the prefix is moved after installing to prove it is relocatable.
set -euo pipefail
build=$1
source_dir=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH
cmake --install "$build" --prefix "$work/installed" >/dev/null
mv "$work/installed" "$work/prefix"  # anywhere, not only where it was installed
prefix=$work/prefix
for tool in chorus-run chorus-topo chorus-info chorus-perf; do
  [[ ! -e $prefix/bin/$tool ]] && continue
  libs=$(ldd "$prefix/bin/$tool")
  if ! grep -q "libchorus.so.0 => $prefix/" <<<"$libs"; then
    echo "FAIL: installed $tool does not find the installed libchorus.so:"; echo "$libs"; exit 1
  fi
done
if [[ -x $prefix/bin/chorus-info ]]; then
  info=$("$prefix/bin/chorus-info" --json)
  grep -q '"name": "CHORUS_TIMEOUT"' <<<"$info"
fi
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig"
cmake -S "$source_dir/examples/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/consumer" -j 2 >/dev/null
"$prefix/bin/chorus-run" -n 3 "$work/consumer/allreduce_cpp"
"$prefix/bin/chorus-run" -n 3 "$work/consumer/allreduce_c"
