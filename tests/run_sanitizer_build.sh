#!/usr/bin/env bash
# Configures and builds the clang ASan+UBSan+libFuzzer variant of the tree:
# every target, or only the TARGETs given (scripts/fuzz.sh builds its fuzzers).
# TEST_PYTHON: the outer build's test venv python (dynamic_plugins_test asks it
# for the OpenZL plugin); the nested build has no venv of its own. May be "".
# Usage: run_sanitizer_build.sh SRC DIR FIXTURES [TEST_PYTHON [TARGET...]]
set -euo pipefail
src=$1 dir=$2 fixtures=$3 test_python=${4:-}
shift $(($# < 4 ? $# : 4))
cmake -S "$src" -B "$dir" -DCMAKE_CXX_COMPILER="${CXX:-clang++}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DBLOSC2FS_SANITIZE=ON -DBLOSC2FS_FUZZ=ON -DBLOSC2FS_FIXTURES="$fixtures" \
  ${test_python:+-DBLOSC2FS_TEST_PYTHON="$test_python"} >/dev/null
targets=()
for target in "$@"; do targets+=(--target "$target"); done
cmake --build "$dir" -j"$(nproc)" "${targets[@]}"
