#!/usr/bin/env bash
# Random arrays outside CI (tests/integration/test_random_arrays.py): python-blosc2
# writes each with drawn dtypes, shapes, chunks, codecs and filters; the mount's
# array.npy and Zarr views must read what python-blosc2 reads (or the values
# written, or what c-blosc2 decompresses the chunks to, where python-blosc2
# misreads: docs/codecs.md), and a region written through the mount must read back.
# CI runs a fixed set of seeds; this runs any.
# Usage: scripts/random-arrays.sh [SEEDS]   (SEEDS: "1-500", "7", "3,9-12"; default 1-200)
# Two runs at once need their own BLOSC2FS_RANDOM_WORKDIR (a run empties its folder first).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BLOSC2FS_BUILD_DIR:-$root/build}
seeds=${1:-${BLOSC2FS_RANDOM_SEEDS:-1-200}}
if [[ ! -x $build/src/fs/blosc2fs || ! -x $build/venv/bin/python ]]; then
  echo "random-arrays.sh: build first (scripts/test.sh, or cmake --build $build and scripts/test-venv.sh $build)" >&2
  exit 1
fi
BLOSC2FS_RANDOM_SEEDS=$seeds exec "$build/venv/bin/python" \
  "$root/tests/integration/test_random_arrays.py" --binary "$build/src/fs/blosc2fs" \
  --fixtures "$root/../shared/fixtures" --workdir "${BLOSC2FS_RANDOM_WORKDIR:-$build/random-arrays-work}"
