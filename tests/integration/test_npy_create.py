"""New arrays: `blosc2fs -o create FRAME.b2nd MOUNT`, then `cp x.npy MOUNT/array.npy`
makes a b2nd array of x. Its chunk and block shapes must be the ones python-blosc2
4.14.1 chooses on this machine (`blosc2.asarray(x).chunks/.blocks`) for a table of
shapes (1-d to 4-d) and dtypes, or the ones -o chunkshape=/blockshape= give; the
codec options of -o create apply; python-blosc2 must read x back exactly.
Also: the daemon's peak RSS (VmHWM) while a 256 MB .npy replaces an array stays
within the cache budget plus the batch bound (the new frame is written beside the
old one chunk row by chunk row, not held in memory)."""

import os
import shutil
import sys

import blosc2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness, TestFailure, check, check_equal, daemon_pid, process_status_kib  # noqa: E402

STRUCT = np.dtype([("a", "<i4"), ("b", "<f8")])

# (shape, dtype): small arrays whose default chunks are the whole array, and
# arrays of a few MB whose default chunks and blocks are cut by the rule.
TABLE = [
    ((1000,), "<f4"),
    ((2_000_000,), "<f4"),
    ((3_000_001,), "|u1"),
    ((1000, 1000), "<f8"),
    ((513, 2049), "<i2"),
    ((7, 1001, 3), "<f8"),
    ((64, 300, 200), "<f4"),
    ((50, 60, 70), "<c16"),
    ((3, 4, 5, 6), "|u1"),
    ((20, 30, 40, 50), "<f8"),
    ((100, 37), "|b1"),
    ((5000,), STRUCT),
]


def sample(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.names:
        x = np.zeros(shape, dt)
        x["a"] = rng.integers(-1000, 1000, shape)
        x["b"] = rng.standard_normal(shape)
        return x
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(dt)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    if dt.kind == "f":
        # Smooth values compress, as real data do; exact bytes are compared anyway.
        return (np.arange(int(np.prod(shape))).reshape(shape) % 1000 + rng.random(shape)).astype(dt)
    return rng.integers(0, 100, shape).astype(dt)


def make_through_mount(h, name, x, options=()):
    frame = os.path.join(h.workdir, name)
    if os.path.exists(frame):
        os.remove(frame)
    src = os.path.join(h.workdir, name + ".npy")
    np.save(src, x)
    mnt = h.mount(frame, ["-o", "create"] + list(options))
    try:
        check(not os.path.exists(os.path.join(mnt, "array.npy")), "an empty frame shows no array.npy")
        shutil.copyfile(src, os.path.join(mnt, "array.npy"))
        got = np.load(os.path.join(mnt, "array.npy"))
        check_equal(got.shape, x.shape, f"{name}: array.npy's shape after the copy")
    finally:
        h.unmount(mnt)
        os.remove(src)
    return frame


def check_read_back(frame, x, what):
    a = blosc2.open(frame, mode="r")
    got = a[()] if a.ndim == 0 else a[:]
    check_equal(got.dtype, x.dtype, f"{what}: dtype")
    check_equal(got.shape, x.shape, f"{what}: shape")
    check(got.tobytes() == x.tobytes(), f"{what}: python-blosc2 reads other values")
    return a


def default_partition(h, seed, shape, dtype):
    x = sample(shape, dtype, seed)
    frame = make_through_mount(h, "new.b2nd", x)
    a = check_read_back(frame, x, f"{shape} {np.dtype(dtype)}")
    want = blosc2.asarray(x)
    check_equal((a.chunks, a.blocks), (want.chunks, want.blocks),
                f"{shape} {np.dtype(dtype)}: (chunks, blocks) against blosc2.asarray's")
    # python-blosc2's defaults for the codec: zstd, level 1, shuffle.
    check_equal((a.cparams.codec, a.cparams.clevel), (blosc2.Codec.ZSTD, 1), "codec and level")
    os.remove(frame)


def given_partition_and_codec(h):
    x = sample((33, 47, 5), "<f8", 7)
    frame = make_through_mount(h, "given.b2nd", x,
                               ["-o", "chunkshape=10,20,5", "-o", "blockshape=5x4x5", "-o", "codec=lz4",
                                "-o", "clevel=5"])
    a = check_read_back(frame, x, "chunkshape= and blockshape=")
    check_equal((a.chunks, a.blocks), ((10, 20, 5), (5, 4, 5)), "the shapes -o gave")
    check_equal((a.cparams.codec, a.cparams.clevel), (blosc2.Codec.LZ4, 5), "the codec -o gave")
    # Only the chunk shape given: blocks as python-blosc2 cuts them inside it.
    frame = make_through_mount(h, "chunks-only.b2nd", x, ["-o", "chunkshape=16,47,5"])
    a = check_read_back(frame, x, "chunkshape= alone")
    want = blosc2.asarray(x, chunks=(16, 47, 5))
    check_equal((a.chunks, a.blocks), (want.chunks, want.blocks), "chunkshape= alone against python-blosc2")


def nd_filters_partition(h):
    """An empty frame python-blosc2 made with the NDMEAN or NDCELL filter: the new
    array gets python-blosc2's chunks and blocks for those settings (c-blosc2's
    tuner's block size, not 32 KiB), and the values python-blosc2 itself makes."""
    x = sample((3000, 2000), "<f4", 11)
    src = os.path.join(h.workdir, "nd.npy")
    np.save(src, x)
    for what, cparams in [
            ("NDMEAN, zstd 5, auto split", dict(codec=blosc2.Codec.ZSTD, clevel=5, filters=[blosc2.Filter.NDMEAN],
                                                 filters_meta=[4], splitmode=blosc2.SplitMode.AUTO_SPLIT)),
            ("NDCELL, lz4 9, always split", dict(codec=blosc2.Codec.LZ4, clevel=9, filters=[blosc2.Filter.NDCELL],
                                                  filters_meta=[4], splitmode=blosc2.SplitMode.ALWAYS_SPLIT))]:
        frame = os.path.join(h.workdir, "nd.b2frame")
        if os.path.exists(frame):
            os.remove(frame)
        blosc2.SChunk(urlpath=frame, contiguous=True, mode="w", cparams=dict(cparams, typesize=4))
        mnt = h.mount(frame)
        try:
            shutil.copyfile(src, os.path.join(mnt, "array.npy"))
        finally:
            h.unmount(mnt)
        a = blosc2.open(frame, mode="r")
        want = blosc2.compute_chunks_blocks(x.shape, dtype=x.dtype, cparams=blosc2.CParams(**cparams))
        check_equal((a.chunks, a.blocks), want, f"{what}: (chunks, blocks) against compute_chunks_blocks")
        check(a.blocks != blosc2.compute_chunks_blocks(x.shape, dtype=x.dtype)[1],
              f"{what}: the blocks differ from the 32 KiB default's (the case tests the tuner's size)")
        check_equal(a.cparams.filters[0], cparams["filters"][0], f"{what}: the filter kept")
        ref = blosc2.asarray(x, chunks=a.chunks, blocks=a.blocks, cparams=dict(cparams, typesize=4))
        check(np.array_equal(a[:], ref[:]), f"{what}: the values python-blosc2 makes of x with these settings")
    os.remove(src)


def not_over_an_array(h):
    """A frame that already holds data is no new array: array.npy cannot be created."""
    frame = os.path.join(h.workdir, "bytes.b2frame")
    if os.path.exists(frame):
        os.remove(frame)
    mnt = h.mount(frame, ["-o", "create"])
    try:
        with open(os.path.join(mnt, "data"), "wb") as f:
            f.write(b"x" * 1000)
        src = os.path.join(h.workdir, "small.npy")
        np.save(src, np.arange(10))
        try:
            shutil.copyfile(src, os.path.join(mnt, "array.npy"))
        except PermissionError:
            pass
        else:
            raise TestFailure("array.npy was created over a frame that holds data")
    finally:
        h.unmount(mnt)


def bounded_memory_replacement(h):
    """A 256 MB float32 .npy replaces an array of the same dtype through a mount
    with a 64 MB cache: the daemon's peak RSS grows by at most the cache budget
    plus the batch bound (half the cache: 32 MB)."""
    old = np.zeros((64, 8192), "<f4")
    frame = os.path.join(h.workdir, "big.b2nd")
    blosc2.asarray(old, urlpath=frame, mode="w")
    rows = 8192  # 8192 x 8192 float32: 256 MiB
    src = os.path.join(h.workdir, "big.npy")
    x = np.lib.format.open_memmap(src, mode="w+", dtype="<f4", shape=(rows, 8192))
    for r in range(0, rows, 1024):
        x[r:r + 1024] = (np.arange(1024 * 8192, dtype="<f4").reshape(1024, 8192) % 977) + r
    x.flush()
    del x
    mnt = h.mount(frame, ["-o", "cache_size=64M"])
    try:
        pid = daemon_pid(mnt)
        before = process_status_kib(pid, "VmHWM")
        shutil.copyfile(src, os.path.join(mnt, "array.npy"))
        after = process_status_kib(pid, "VmHWM")
        print(f"  daemon VmHWM {before} KiB before, {after} KiB after the 256 MiB replacement", flush=True)
        bound_kib = (64 + 32) * 1024
        check(after - before <= bound_kib,
              f"the daemon's peak RSS grew by {after - before} KiB, more than the cache budget plus the batch "
              f"bound ({bound_kib} KiB)")
    finally:
        h.unmount(mnt)
    a = blosc2.open(frame, mode="r")
    check_equal(a.shape, (rows, 8192), "shape after the replacement")
    want = np.load(src, mmap_mode="r")
    for r in (0, 1000, 4095, 8191):
        check(np.array_equal(a[r], want[r]), f"row {r} after the replacement")
    os.remove(src)
    os.remove(frame)


def ndcell_frames(h, contiguous):
    """An empty frame python-blosc2 made with the NDCELL filter (lossless): the
    new array's chunks and blocks are python-blosc2's for that codec, level,
    split mode and those filters (it asks c-blosc2's tuner for the block size),
    and python-blosc2 reads the values back exactly."""
    F, C, S = blosc2.Filter, blosc2.Codec, blosc2.SplitMode
    cases = [
        ((300, 400, 50), "<f4", blosc2.CParams(codec=C.ZSTD, clevel=6, typesize=4, filters=[F.NDCELL, F.SHUFFLE],
                                                filters_meta=[4, 0])),
        ((2000, 700), "<u2", blosc2.CParams(codec=C.LZ4, clevel=9, typesize=2, splitmode=S.ALWAYS_SPLIT,
                                             filters=[F.NDCELL], filters_meta=[2])),
    ]
    for n, (shape, dtype, cparams) in enumerate(cases):
        frame = os.path.join(h.workdir, f"ndcell-{n}.b2nd")
        blosc2.remove_urlpath(frame)
        storage = blosc2.Storage(urlpath=frame, mode="w", contiguous=contiguous)
        schunk = blosc2.SChunk(chunksize=1 << 20, storage=storage, cparams=cparams)
        del schunk
        x = (np.arange(int(np.prod(shape))).reshape(shape) % 1013).astype(dtype)
        src = os.path.join(h.workdir, f"ndcell-{n}.npy")
        np.save(src, x)
        mnt = h.mount(frame)
        try:
            shutil.copyfile(src, os.path.join(mnt, "array.npy"))
        finally:
            h.unmount(mnt)
            os.remove(src)
        what = f"{shape} {dtype} {cparams.codec.name} clevel {cparams.clevel} {[f.name for f in cparams.filters]}"
        a = check_read_back(frame, x, what)
        want = blosc2.compute_chunks_blocks(shape, dtype=np.dtype(dtype), cparams=cparams)
        check_equal((a.chunks, a.blocks), tuple(tuple(v) for v in want),
                    f"{what}: (chunks, blocks) against blosc2.compute_chunks_blocks")
        check_equal(a.schunk.cparams.filters[:len(cparams.filters)], list(cparams.filters), f"{what}: filters")
        blosc2.remove_urlpath(frame)


def main():
    h = Harness("new arrays from .npy files, and bounded-memory replacement", watchdog_seconds=300)
    h.require_fuse()
    for seed, (shape, dtype) in enumerate(TABLE):
        h.test(f"new array {shape} {np.dtype(dtype)}: python-blosc2's chunks and blocks, values exact",
               default_partition, h, seed, shape, dtype)
    h.test("chunkshape=, blockshape=, codec= and clevel= options", given_partition_and_codec, h)
    h.test("NDMEAN and NDCELL frames: python-blosc2's chunks and blocks, its values", nd_filters_partition, h)
    h.test("no new array over a frame that holds data", not_over_an_array, h)
    h.test("NDCELL frames python-blosc2 made: its chunks and blocks for those filters (contiguous)", ndcell_frames, h,
           True)
    h.test("NDCELL frames python-blosc2 made: its chunks and blocks for those filters (sparse)", ndcell_frames, h,
           False)
    h.test("a 256 MiB replacement within the cache budget plus the batch bound", bounded_memory_replacement, h)
    h.finish()


if __name__ == "__main__":
    main()
