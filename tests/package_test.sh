#!/usr/bin/env bash
# Builds the Debian package with CPack, checks its name, contents and declared
# dependencies, checks with apt (simulated) that Debian can satisfy them, then EXTRACTS it
# into a scratch root (nothing is installed on this machine), builds examples/consumer
# against the extracted /usr and runs it on 3 ranks with the packaged chorus-run.
set -euo pipefail
build=$1
source_dir=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")
(cd "$build" && cpack -G DEB -B "$work/pkg" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; exit 1; }
deb=$work/pkg/chorus_${version}_amd64.deb
[[ -f $deb ]] || { echo "FAIL: no $deb"; ls "$work/pkg"; exit 1; }

contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in usr/lib/libchorus.so.0 usr/include/chorus/chorus.hpp usr/include/chorus/chorus.h \
         usr/bin/chorus-run usr/bin/chorus-info usr/lib/cmake/Chorus/ChorusConfig.cmake \
         usr/lib/pkgconfig/chorus.pc; do
  grep -qx "\./$f" <<<"$contents" || { echo "FAIL: $f is not in the package"; echo "$contents"; exit 1; }
done
depends=$(dpkg-deb -f "$deb" Depends)
for d in libc6 libstdc++6 libhwloc15; do
  grep -q "$d" <<<"$depends" || { echo "FAIL: Depends lacks $d: $depends"; exit 1; }
done
echo "package $(basename "$deb"), Depends: $depends"
# Debian can satisfy what it declares (a simulation: nothing changes on this machine).
if command -v apt-get >/dev/null; then
  apt-get install -s -qq "$deb" >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; exit 1; }
fi

root=$work/root
dpkg-deb -x "$deb" "$root"
table=$("$root/usr/bin/chorus-info" --markdown)
grep -q CHORUS_TIMEOUT <<<"$table"
export PKG_CONFIG_PATH="$root/usr/lib/pkgconfig:$root/usr/lib/x86_64-linux-gnu/pkgconfig"
cmake -S "$source_dir/examples/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$root/usr" >/dev/null
cmake --build "$work/consumer" -j 2 >/dev/null
"$root/usr/bin/chorus-run" -n 3 "$work/consumer/allreduce_cpp"
"$root/usr/bin/chorus-run" -n 3 "$work/consumer/allreduce_c"
