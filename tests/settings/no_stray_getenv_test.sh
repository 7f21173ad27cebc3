#!/usr/bin/env bash
# Settings are read only through the registry: no getenv of a CHORUS_/NCCL_ name outside
# src/settings, and every name passed to a settings:: accessor is declared.
set -euo pipefail
src=$1
cd "$src"
dirs=(src transports tools perf kernels algorithms)
stray=$(grep -rnE 'getenv\("(CHORUS|NCCL)_' "${dirs[@]}" --include='*.cpp' --include='*.hpp' \
          --include='*.h' --include='*.cu' | grep -v '^src/settings/' || true)
if [[ -n $stray ]]; then
  echo "FAIL: settings read around the registry (use settings::integer/text/bytes/...):"
  echo "$stray"
  exit 1
fi
undeclared=0
for name in $(grep -rhoE 'settings::[a-z]+\("(CHORUS_[A-Z0-9_]+)"' "${dirs[@]}" | grep -oE 'CHORUS_[A-Z0-9_]+' | sort -u); do
  if ! grep -q "{\"$name\"," src/settings/registry.cpp; then
    echo "FAIL: $name is read but not declared in src/settings/registry.cpp"
    undeclared=1
  fi
done
exit $undeclared
