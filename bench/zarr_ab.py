"""Interleaved A/B of two blosc2fs builds on one Zarr read: each round mounts
every build in turn (page cache dropped, a fresh mount each time), times
zarr-python reading SELECTION from the mount's Zarr view, checks the values
against python-blosc2's, then times python-blosc2 itself cold. On a machine
whose speed drifts (a VM with steal time), rounds a few seconds apart compare
where separate runs of bench/zarr_view.py do not. Prints one line per build.

    zarr_ab.py BLOSC2FS[,BLOSC2FS...] FRAME ROUNDS SELECTION
    e.g. zarr_ab.py old/blosc2fs,new/blosc2fs tiles.b2nd 11 '[4000:4100, 4000:4100]'
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

import blosc2
import numpy as np
import zarr


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")


def main():
    builds, frame, rounds, text = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3]), sys.argv[4]
    selection = eval("np.s_" + text)  # a slice expression given by the person running it
    want = blosc2.open(frame)[selection]
    mnt = tempfile.mkdtemp(prefix="zarr-ab-")
    times = {b: [] for b in builds}
    reference = []
    try:
        for _ in range(rounds):
            for build in builds:
                drop_caches()
                subprocess.run([build, "-o", "ro", frame, mnt], check=True, timeout=300)
                try:
                    start = time.monotonic()
                    got = zarr.open_array(mnt, mode="r")[selection]
                    times[build].append(time.monotonic() - start)
                finally:
                    subprocess.run(["fusermount3", "-u", mnt], check=True)
                assert np.array_equal(got, want), f"{build}: values differ from python-blosc2's"
            drop_caches()
            start = time.monotonic()
            blosc2.open(frame)[selection]
            reference.append(time.monotonic() - start)
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-u", "-z", mnt])
        os.rmdir(mnt)
    ref = statistics.median(reference)
    print(f"python-blosc2 in-process: {ref:.4f} s ({min(reference):.4f}-{max(reference):.4f})")
    for build in builds:
        t = times[build]
        print(f"{build}: {statistics.median(t):.4f} s ({min(t):.4f}-{max(t):.4f}), "
              f"{statistics.median(t) / ref:.2f}x python-blosc2")


if __name__ == "__main__":
    main()
