#!/usr/bin/env bash
# Builds blosc2fs and runs every test (unit, conformance, integration mounts,
# sanitizer and fuzz runs) through ctest. Run as root on Debian bookworm.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
started=$SECONDS
phase() { echo "test.sh: $1 after $((SECONDS - started)) s"; }
"$root/scripts/install-deps.sh"
phase "dependencies installed"
build=${BLOSC2FS_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# The test venvs download while the tree compiles: one waits on the network,
# the other on the CPUs. Their output is shown once the build is done.
mkdir -p "$build"
venv_log=$build/venvs.log
("$root/scripts/test-venv.sh" "$build" && "$root/scripts/caterva2-venv.sh" "$build") >"$venv_log" 2>&1 &
venvs=$!
trap 'kill "$venvs" 2>/dev/null || true' EXIT
cmake --build "$build" -j"$(nproc)"
phase "built"
venvs_status=0
wait "$venvs" || venvs_status=$?
trap - EXIT
cat "$venv_log"
if ((venvs_status != 0)); then
  echo "test.sh: making the test venvs failed (status $venvs_status; output above)" >&2
  exit "$venvs_status"
fi
phase "test venvs ready"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
phase "ctest done"
