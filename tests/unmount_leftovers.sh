#!/usr/bin/env bash
# The cleanup of every integration test (ctest FIXTURES_CLEANUP): a test that
# ctest stopped at its time limit is killed with its daemons and cannot unmount
# what it mounted. Detaches every mount left under the given work folders,
# deepest first, and fails naming them, so a run never leaves a mount behind.
# Usage: unmount_leftovers.sh DIR...
set -uo pipefail
fusermount=$(command -v fusermount3 || echo /usr/bin/fusermount3)
found=()
for _ in 1 2 3 4 5 6 7 8 9 10; do  # a point may carry several mounts
  left=()
  while read -r _ point type _; do
    for dir in "$@"; do
      [[ $point == "$dir"/* ]] && left+=("$type $point")
    done
  done </proc/mounts
  ((${#left[@]})) || break
  while read -r type point; do
    found+=("$point")
    if [[ $type == fuse* ]]; then
      "$fusermount" -u -z "$point" 2>/dev/null || umount -l "$point"
    else
      umount -l "$point"
    fi
  done < <(printf '%s\n' "${left[@]}" | sort -k2 -r)
done
if ((${#found[@]})); then
  printf 'mount left behind (a stopped test), unmounted: %s\n' $(printf '%s\n' "${found[@]}" | sort -u)
  exit 1
fi
echo "no mount left under $*"
