#!/usr/bin/env bash
# Long runs of the model test outside CI (tests/integration/test_model.py):
# random operation sequences through a real mount, checked against a model
# after every step. CI runs a fixed set of seeds; this runs any.
# Usage: scripts/model.sh [SEEDS] [STEPS]   (SEEDS: "1-1000", "7", "3,9-12"; default 1-1000; STEPS: 24)
# A failure prints its seed and the shortest failing sequence; replay it with
# BLOSC2FS_MODEL_SEEDS=N scripts/model.sh N.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BLOSC2FS_BUILD_DIR:-$root/build}
seeds=${1:-${BLOSC2FS_MODEL_SEEDS:-1-1000}}
steps=${2:-${BLOSC2FS_MODEL_STEPS:-24}}
if [[ ! -x $build/src/fs/blosc2fs || ! -x $build/venv/bin/python ]]; then
  echo "model.sh: build first (scripts/test.sh, or cmake --build $build and scripts/test-venv.sh $build)" >&2
  exit 1
fi
BLOSC2FS_MODEL_SEEDS=$seeds BLOSC2FS_MODEL_STEPS=$steps exec "$build/venv/bin/python" \
  "$root/tests/integration/test_model.py" --binary "$build/src/fs/blosc2fs" \
  --fixtures "$root/../shared/fixtures" --workdir "$build/model-work"
