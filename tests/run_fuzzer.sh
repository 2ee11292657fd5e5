#!/usr/bin/env bash
# Runs one libFuzzer target the same way on every run of a commit, so that CI
# finds what it finds deterministically (exploring from random seeds is
# scripts/fuzz.sh's job, outside CI):
#   1. every committed input (the regression inputs and the seeds) once, whole;
#   2. RUNS mutations from a fixed -seed=SEED, starting from those inputs.
# Any crash, sanitizer report, leak, timeout or out-of-memory fails the test.
# Usage: run_fuzzer.sh BINARY WORKDIR RUNS SEED DIR...   (DIRs: inputs to start from)
set -euo pipefail
binary=$1 work=$2 runs=$3 seed=$4
shift 4
rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts"
inputs=()
for dir in "$@"; do
  [[ -d $dir ]] || continue
  while IFS= read -r -d '' f; do
    inputs+=("$f")
    cp "$f" "$work/corpus/$(sha1sum "$f" | cut -c1-40)"
  done < <(find "$dir" -type f ! -name '*.py' ! -name '*.md' -print0 | sort -z)
done
cd "$work"
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
limits=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048)
echo "fuzz $(basename "$binary"): replaying ${#inputs[@]} committed inputs"
if ((${#inputs[@]})); then
  set +e
  "$binary" "${limits[@]}" -artifact_prefix="$work/artifacts/" "${inputs[@]}" > replay.log 2>&1
  status=$?
  set -e
  if ((status != 0)); then
    tail -n 40 replay.log
    echo "fuzz $(basename "$binary"): a committed input failed (exit status $status)"
    exit "$status"
  fi
fi
echo "fuzz $(basename "$binary"): $runs runs from -seed=$seed"
set +e
"$binary" "${limits[@]}" -seed="$seed" -runs="$runs" -max_len=262144 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 corpus > fuzz.log 2>&1
status=$?
set -e
tail -n 25 fuzz.log
echo "fuzz $(basename "$binary"): exit status $status"
exit "$status"
