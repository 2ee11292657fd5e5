"""The zarr rows of bench/run.sh: Zarr readers on the mount's Zarr view
(docs/zarr.md) against python-blosc2 in-process and against a Zarr copy of the
same data compressed with zstd on local disk. Cold: the page cache is dropped and
the mount made afresh before every timed read; the readers compared in a row
take turns round by round, and the row's verdict is the median of the rounds'
ratios. Prints markdown rows
"| what | blosc2fs | reference | — | target | verdict |".

    zarr_view.py BLOSC2FS SCRATCH SIZE_MB RUNS
"""

import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

import blosc2  # noqa: E402
import dask.array as da  # noqa: E402
import numpy as np  # noqa: E402
import zarr  # noqa: E402

from remote_servers import Nginx  # noqa: E402
from bench_rows import make_log, print_rows, row, verdict  # noqa: E402

log = make_log("bench zarr")

BINARY, SCRATCH, SIZE_MB, RUNS = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ROOT = os.path.join(SCRATCH, "zarr")
MNT = os.path.join(SCRATCH, "zarr-mnt")


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")


def mount(frame, options=()):
    os.makedirs(MNT, exist_ok=True)
    r = subprocess.run([BINARY, "-o", "ro"] + list(options) + [frame, MNT], capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"mount {frame}: {r.stderr.strip()}")


def unmount():
    if os.path.ismount(MNT):
        if subprocess.run(["fusermount3", "-u", MNT], capture_output=True).returncode != 0:
            subprocess.run(["fusermount3", "-u", "-z", MNT], capture_output=True)


def cold_rounds(works):
    """Each of `works` ({name: (work, frame or None)}) timed RUNS times, each time
    after dropping the page cache (and on a fresh mount of `frame`), the works
    taking turns within a round (the order turning each round): on a VM whose
    speed drifts with the host's steal time, figures taken seconds apart
    compare where series taken a minute apart do not. Returns
    {name: (median, min, max)} and {name: per-round times}."""
    names = list(works)
    times = {n: [] for n in names}
    for r in range(RUNS):
        for n in names[r % len(names):] + names[:r % len(names)]:
            work, frame = works[n]
            unmount()
            drop_caches()
            if frame:
                mount(frame)
            start = time.monotonic()
            work()
            times[n].append(time.monotonic() - start)
            unmount()
    return {n: (statistics.median(t), min(t), max(t)) for n, t in times.items()}, times


def round_ratio(times, num, den):
    """The median over rounds of times[num] / times[den], each pair measured in one round."""
    return statistics.median(a / b for a, b in zip(times[num], times[den]))


def fmt(t):
    return f"{t[0]:.4f} s ({t[1]:.4f}–{t[2]:.4f})"


def make(path, shape, chunks, blocks, make_values):
    if os.path.exists(path):
        return
    log(f"making {path}")
    tmp = path + ".tmp"
    arr = blosc2.empty(shape, dtype=np.float32, chunks=chunks, blocks=blocks, urlpath=tmp, mode="w")
    rows = chunks[0]
    for r in range(0, shape[0], rows):
        arr[r:r + rows] = make_values(r, min(rows, shape[0] - r), shape[1:])
    os.replace(tmp, path)


def noisy(r, n, rest):
    rng = np.random.default_rng(r)
    base = np.sin(np.arange(r, r + n, dtype=np.float32)[:, None] / 50.0) * 100
    return (base + rng.normal(0, 1, (n,) + rest)).astype(np.float32)


def zarr_copy(src, dst):
    """A Zarr v3 copy compressed with zstd (zarr-python's default codec), chunked as the b2nd chunks."""
    if os.path.exists(dst):
        return
    log(f"making the Zarr copy {dst}")
    arr = blosc2.open(src)
    z = zarr.create_array(dst + ".tmp", shape=arr.shape, chunks=arr.chunks, dtype=arr.dtype,
                          compressors=zarr.codecs.ZstdCodec(level=3), overwrite=True)
    step = arr.chunks[0]
    for r in range(0, arr.shape[0], step):
        z[r:r + step] = arr[r:r + step]
    os.replace(dst + ".tmp", dst)


def local_view_copy(path, name):
    """A copy on local disk of the view's zarr.json and c/ for the frame at
    `path` (remade when the build's view differs); returns (its path, zarr.json)."""
    view_copy = os.path.join(ROOT, name + ".view")
    mount(path)
    try:
        with open(os.path.join(MNT, "zarr.json")) as f:
            view_json = f.read()
        stale = not os.path.exists(view_copy) or open(os.path.join(view_copy, "zarr.json")).read() != view_json
        if stale:  # made by a build whose view differs (sharded then, plain now, or the reverse)
            shutil.rmtree(view_copy, ignore_errors=True)
            shutil.rmtree(view_copy + ".tmp", ignore_errors=True)
            shutil.copytree(MNT, view_copy + ".tmp", ignore=lambda d, names: [
                n for n in names if d == MNT and n not in ("zarr.json", "c")])
    finally:
        unmount()
    if stale:
        os.replace(view_copy + ".tmp", view_copy)
    return view_copy, view_json


def sub_array_rows():
    """8,000 x 8,000 float32, chunks 1,000 x 1,000, blocks 100 x 1,000 (the issue's array)."""
    path = os.path.join(ROOT, "tiles.b2nd")
    make(path, (8000, 8000), (1000, 1000), (100, 1000), noisy)
    sl = (slice(4000, 4100), slice(4000, 4100))
    col = (slice(None), 4500)
    want_slice = blosc2.open(path)[sl]
    want_col = blosc2.open(path)[col]

    def blosc2_read(sel):
        return lambda: blosc2.open(path)[sel]

    def zarr_read(sel, want):
        def work():
            got = zarr.open_array(MNT, mode="r")[sel]
            assert np.array_equal(got, want)
        return work

    def npy_read(sel):
        return lambda: np.array(np.load(os.path.join(MNT, "array.npy"), mmap_mode="r")[sel])

    for what, sel, want, factor in (("[4000:4100, 4000:4100]", sl, want_slice, 3), ("[:, 4500]", col, want_col, 2)):
        t, each = cold_rounds({"ref": (blosc2_read(sel), None), "ours": (zarr_read(sel, want), path),
                               "npy": (npy_read(sel), path)})
        ratio = round_ratio(each, "ours", "ref")
        row(f"zarr: 8000^2 f4 (chunks 1000^2, blocks 100 x 1000) {what}, zarr-python on the mount vs python-blosc2, cold "
            f"(np.load(array.npy, mmap) on the mount: {fmt(t['npy'])}); per round {ratio:.2f}x python-blosc2",
            fmt(t["ours"]), fmt(t["ref"]), f"<= {factor}x python-blosc2", verdict(ratio <= factor))


def whole_rows(size_mb):
    size_mb = min(size_mb, 512)
    cases = [(f"{size_mb} MB f4 (4 MB chunks)", f"bars-{size_mb}.b2nd", (size_mb * 256, 1024), (1024, 1024), (64, 1024)),
             ("2000 x 2000 f4 (256 x 256 chunks)", "squares.b2nd", (2000, 2000), (256, 256), (64, 64))]
    for label, name, shape, chunks, blocks in cases:
        path = os.path.join(ROOT, name)
        make(path, shape, chunks, blocks, noisy)
        copy = os.path.join(ROOT, name + ".zarr")
        zarr_copy(path, copy)
        nbytes = int(np.prod(shape)) * 4
        view_copy, view_json = local_view_copy(path, name)
        layout = "sharded" if '"sharding_indexed"' in view_json else "plain"
        t, each = cold_rounds({"ref": (lambda: blosc2.open(path)[:], None),
                               "ours": (lambda: zarr.open_array(MNT, mode="r")[:], path),
                               "other": (lambda: zarr.open_array(copy, mode="r")[:], None),
                               "local": (lambda: zarr.open_array(view_copy, mode="r")[:], None)})
        ref, ours, other, local = t["ref"], t["ours"], t["other"], t["local"]
        speed = round_ratio(each, "ref", "ours")  # python-blosc2's time over the mount's: the "0.5x"
        ahead = round_ratio(each, "ours", "other")
        mbps = lambda t: nbytes / t[0] / 1e6  # noqa: E731
        row(f"zarr: whole {label}, zarr-python on the mount vs python-blosc2 [:] in-process, cold "
            f"(zarr-python on a zstd Zarr copy on disk: {fmt(other)}, {mbps(other):.0f} MB/s); per round "
            f"{speed:.2f}x in-process, {ahead:.2f} of the copy's time",
            f"{fmt(ours)}, {mbps(ours):.0f} MB/s", f"{fmt(ref)}, {mbps(ref):.0f} MB/s",
            ">= 0.5x in-process and ahead of the Zarr copy", verdict(speed >= 0.5 and ahead < 1))
        # The same files on local disk, no mount, in the same rounds: the most
        # any store can give zarr-python for this layout (nothing to decode, no
        # FUSE), against which the mount's cost is the difference.
        row(f"zarr: whole {label}, zarr-python on a local-disk copy of the view's zarr.json and c/ ({layout}; "
            f"no mount, nothing to decode), cold, in the same rounds; per round "
            f"{round_ratio(each, 'ref', 'local'):.2f}x in-process, the mount {round_ratio(each, 'ours', 'local'):.2f} "
            f"of its time", f"{fmt(local)}, {mbps(local):.0f} MB/s", "—", "—", "info")
        # A small slice: what a plain view (the whole chunk decoded) costs a partial read.
        sl = (slice(1000, 1010), slice(0, 10))
        want = blosc2.open(path)[sl]
        def zarr_slice():
            assert np.array_equal(zarr.open_array(MNT, mode="r")[sl], want)
        t, _ = cold_rounds({"ref": (lambda: blosc2.open(path)[sl], None), "ours": (zarr_slice, path)})
        ref, ours = t["ref"], t["ours"]
        row(f"zarr: {label} [1000:1010, 0:10] ({layout} view), zarr-python on the mount vs python-blosc2, cold",
            fmt(ours), fmt(ref), "—", "info")
        # dask takes zarr-python's .chunks, which for a sharded array are the inner chunks
        # (the b2nd blocks): a task per block. The shards (the b2nd chunks) are its unit.
        def dask_mean():
            z = zarr.open_array(MNT, mode="r")
            return da.from_zarr(z, chunks=z.shards or z.chunks).mean().compute(scheduler="threads", num_workers=2)
        t, _ = cold_rounds({"ours": (dask_mean, path),
                            "other": (lambda: da.from_zarr(copy).mean().compute(scheduler="threads", num_workers=2),
                                      None)})
        ours, other = t["ours"], t["other"]
        row(f"zarr: dask from_zarr(z, chunks=z.shards).mean(), 2 threads, {label}, the mount vs the zstd Zarr copy, cold",
            fmt(ours), fmt(other), "—", "info")


def remote_row():
    """One chunk (10 x 10 float32: a plain chunk file) of a 10,000-chunk array behind nginx: the requests it costs."""
    served = os.path.join(ROOT, "served")
    os.makedirs(served, exist_ok=True)
    path = os.path.join(served, "many.b2nd")
    if not os.path.exists(path):
        blosc2.asarray(noisy(0, 1000, (1000,)), urlpath=path, mode="w", chunks=(10, 10), blocks=(5, 5))
    with Nginx(served, os.path.join(SCRATCH, "zarr-nginx")) as nginx:
        counts, times = [], []
        for _ in range(RUNS):
            unmount()
            mount(f"{nginx.url}/many.b2nd")
            before = len(nginx.requests())
            start = time.monotonic()
            zarr.open_array(MNT, mode="r")[505:507, 705:707]
            times.append(time.monotonic() - start)
            counts.append(len(nginx.requests()) - before)
            unmount()
    row("zarr: one chunk of a 10,000-chunk array from nginx through zarr-python: requests (time)",
        f"{statistics.median(counts):.0f} ({statistics.median(times):.4f} s)", "—", "about 2",
        verdict(statistics.median(counts) <= 2))


def main():
    os.makedirs(ROOT, exist_ok=True)
    try:
        sub_array_rows()
        whole_rows(SIZE_MB)
        remote_row()
    finally:
        unmount()
    print_rows()


if __name__ == "__main__":
    main()
