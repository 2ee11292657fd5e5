#!/usr/bin/env bash
# Explores with every fuzz target from random seeds (outside CI, which replays
# fixed seeds: tests/run_fuzzer.sh). Builds the clang ASan+UBSan+libFuzzer tree
# in BUILD/sanitize when needed, runs each target SECONDS (default 600) from its
# committed inputs, and turns every crash, leak, timeout or out-of-memory it
# finds into a minimized regression input under tests/data/fuzz-regressions/TARGET/,
# which every later CI run replays. Prints what ran and what was found.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]      (BLOSC2FS_BUILD_DIR: default build/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
shift || true
build=${BLOSC2FS_BUILD_DIR:-$root/build}
sanitize=$build/sanitize
fixtures=$root/../shared/fixtures
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(chunk_decode_fuzz chunk_roundtrip_fuzz frame_open_fuzz attrs_json_fuzz frame_edit_fuzz
           volume_data_fuzz volume_npy_fuzz store_index_fuzz plugin_codec_fuzz web_index_fuzz zarr_view_fuzz)
fi
"$root/scripts/install-deps.sh"
CXX=${CXX:-clang++} "$root/tests/run_sanitizer_build.sh" "$root" "$sanitize" "$fixtures" "$build/venv/bin/python" "${targets[@]}" >/dev/null

seeds_of() {  # the same starting inputs as the CI runs (tests/CMakeLists.txt)
  case $1 in
    chunk_decode_fuzz|chunk_roundtrip_fuzz) echo "$fixtures/chunks" ;;
    attrs_json_fuzz) echo "$fixtures/expect $root/tests/data/attrs-json" ;;
    store_index_fuzz) echo "$root/tests/data/store-seeds" ;;
    web_index_fuzz) echo "$root/tests/data/web-index" ;;
    plugin_codec_fuzz) echo "$root/tests/data/plugin-codec-seeds" ;;
    frame_edit_fuzz|volume_data_fuzz|volume_npy_fuzz|zarr_view_fuzz) echo "" ;;
    *) echo "$fixtures/frames $fixtures/../fixtures-extra/frames $root/tests/data/legacy-seeds" ;;
  esac
}

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export PATH=$build/venv/bin:$PATH  # plugin_codec_fuzz finds the OpenZL plugin as a mount does
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
report=()
for target in "${targets[@]}"; do
  binary=$sanitize/fuzz/$target
  work=$build/fuzz-explore/$target
  regressions=$root/tests/data/fuzz-regressions/$target
  rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts"
  for dir in $regressions $(seeds_of "$target"); do
    [[ -d $dir ]] && find "$dir" -type f ! -name '*.py' ! -name '*.md' -exec cp {} "$work/corpus/" \;
  done
  echo "== $target: $seconds s from a random seed"
  # -seed=0: libFuzzer picks one and prints it (INFO: Seed: N), which replays the run.
  set +e
  (cd "$work" && "$binary" -seed=0 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
     -malloc_limit_mb=2048 -max_len=262144 -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
     -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -fork=1 corpus > "$work/log" 2>&1)
  set -e
  seed=$(grep -m1 -o 'Seed: [0-9]*' "$work/log" | cut -d' ' -f2 || true)
  # -fork=1 prints no final stats of its own: its progress lines start "#RUNS:".
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | tail -1 | grep -o '[0-9]*$' || true)
  [[ -n $runs ]] || runs=$(grep -o '^#[0-9]*' "$work/log" | tail -1 | tr -d '#' || true)
  found=0
  for artifact in "$work"/artifacts/*; do
    [[ -f $artifact ]] || continue
    mkdir -p "$regressions"
    minimized=$work/minimized-$(basename "$artifact")
    (cd "$work" && "$binary" -minimize_crash=1 -max_total_time=60 -timeout=10 -rss_limit_mb=2048 \
       -exact_artifact_path="$minimized" "$artifact" >/dev/null 2>&1) || true
    [[ -s $minimized ]] || minimized=$artifact
    cp "$minimized" "$regressions/$(basename "$artifact")"
    found=$((found + 1))
    echo "   found: $(basename "$artifact") -> tests/data/fuzz-regressions/$target/"
  done
  report+=("$target: seed ${seed:-?}, ${runs:-?} runs in $seconds s, $found found")
done
echo
printf '%s\n' "${report[@]}"
