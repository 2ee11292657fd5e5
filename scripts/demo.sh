#!/usr/bin/env bash
# Builds blosc2fs, makes a demo frame with the project's own writer (a 3-d float32
# array with vlmetalayers), mounts it on build/demo/mnt and shows a few things a
# user can do there. The mount stays up; the last line says how to unmount.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
build=${BLOSC2FS_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target blosc2fs mkframe

demo=$build/demo
frame=$demo/temperature.b2nd
mnt=$demo/mnt
mkdir -p "$demo" "$mnt"
if mountpoint -q "$mnt"; then fusermount3 -u "$mnt" || fusermount3 -u -z "$mnt"; fi
rm -rf "$frame"
"$build/bench/mkframe" demo "$frame"
"$build/src/fs/blosc2fs" "$frame" "$mnt"

show() { printf '\n$ %s\n' "$*"; (cd "$mnt" && eval "$*"); }
echo "Mounted $frame on $mnt"
show 'ls -l'
show 'ls chunks | head -3; ls raw | head -3'
show 'head -c 600 frame.json; echo ...'
show 'head -4 index.tsv | column -t'
show 'cat attrs/units attrs/source'
show 'cat vlmeta/history'
show "/usr/bin/python3 -c \"import numpy as np; a = np.load('array.npy', mmap_mode='r'); print(a.shape, a.dtype, 'mean %.2f' % a.mean(), 'day 180, equator:', a[180, 45, :4])\""
show 'file preview.png; ls -l preview.png'
show 'cat .blosc2fs-cache'
printf '\nThe first day of the array, drawn as %s (docs/preview.md). Open it with:\n  xdg-open %s\n' \
  "$mnt/preview.png" "$mnt/preview.png"
printf '\nThe frame stays mounted on %s. Unmount with:\n  fusermount3 -u %s\n' "$mnt" "$mnt"
