"""Makes the benchmark's python-blosc2 store: a TreeStore of N leaves in nested
groups (/gAA/sBB/leafNNNNN: 100 leaves per subgroup, 10 subgroups per group),
every other leaf embedded in embed.b2e and every other one a frame file of its
own (.b2d) or zip member (.b2z); every tenth leaf carries a vlmeta attribute.

    python mkstore.py PATH.b2d|PATH.b2z N

Run with the test venv's python (scripts/test-venv.sh), which has the pinned
python-blosc2. Writes PATH.tmp first and renames it, so a half-made store is
never taken for a finished one.
"""

import os
import shutil
import sys

import blosc2
import numpy as np

# Leaves of at least this many bytes are stored outside embed.b2e.
THRESHOLD = 8192


def leaf_key(i):
    return f"/g{i // 1000:02d}/s{i // 100 % 10:02d}/leaf{i:05d}"


def main():
    path, n = sys.argv[1], int(sys.argv[2])
    ext = os.path.splitext(path)[1]
    tmp = path + ".tmp" + ext  # python-blosc2 picks the layout by the suffix
    shutil.rmtree(tmp, ignore_errors=True)
    if os.path.exists(tmp):
        os.remove(tmp)
    with blosc2.TreeStore(tmp, mode="w", threshold=THRESHOLD) as store:
        for i in range(n):
            # 1,000 int32 (4 KB, embedded) or 4,096 (16 KB, external).
            size = 1000 if i % 2 == 0 else 4096
            value = blosc2.asarray(np.arange(i, i + size, dtype="i4"), chunks=(size,), blocks=(size,))
            if i % 10 == 0:
                value.vlmeta["index"] = i
            store[leaf_key(i)] = value
    os.rename(tmp, path)
    print(f"{path}: {n} leaves")


if __name__ == "__main__":
    main()
