#!/usr/bin/env bash
# Builds blosc2fs and runs every test (unit, conformance, integration mounts,
# sanitizer and fuzz runs) through ctest. Run as root on Debian bookworm.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
build=${BLOSC2FS_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
"$root/scripts/test-venv.sh" "$build"
"$root/scripts/caterva2-venv.sh" "$build"
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
