#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time from the fixture seeds; any crash,
# sanitizer report, leak, timeout or out-of-memory fails the test.
set -euo pipefail
binary=$1 work=$2 seconds=$3
shift 3  # the rest: directories of seed inputs
rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts"
for seeds in "$@"; do
  find "$seeds" -type f -exec cp {} "$work/corpus/" \; 2>/dev/null || true
done
cd "$work"
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=262144 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 corpus 2>&1 | tail -n 25
status=${PIPESTATUS[0]}
echo "fuzz $(basename "$binary"): exit status $status"
exit "$status"
