#!/usr/bin/env bash
# Configures and builds the clang ASan+UBSan+libFuzzer variant of the tree
# (every target, or only the TARGETs given: scripts/fuzz.sh builds its fuzzers).
set -euo pipefail
src=$1 dir=$2 fixtures=$3
shift 3
cmake -S "$src" -B "$dir" -DCMAKE_CXX_COMPILER="${CXX:-clang++}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DBLOSC2FS_SANITIZE=ON -DBLOSC2FS_FUZZ=ON -DBLOSC2FS_FIXTURES="$fixtures" >/dev/null
targets=()
for target in "$@"; do targets+=(--target "$target"); done
cmake --build "$dir" -j"$(nproc)" "${targets[@]}"
