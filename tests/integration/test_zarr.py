"""The Zarr view (docs/zarr.md): every N-d array of a mount is a Zarr v3 array
(zarr.json, c/I/J...) and a v2 one (zarr2/), every place of datasets a Zarr
group. Real readers from PyPI read it: zarr-python, xarray, dask, tensorstore
(zarr3, C++) and GDAL (inside rasterio's wheel, the v2 view); every value must
equal python-blosc2's [:]. One mount per group of checks."""

import errno
import json
import os
import re
import subprocess
import sys
import time
import warnings

import blosc2
import dask.array as da
import numpy as np
import tensorstore as ts
import xarray as xr
import zarr

from harness import Harness, TestFailure, check, check_equal, read_file
from remote_servers import Nginx, SeaweedS3

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261127)

# Every dtype blosc2fs reads as numbers, both byte orders.
DTYPES = ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16",
          ">i2", ">i4", ">u8", ">f4", ">f8", ">c16"]
V3_NAMES = {"b": "bool", "i": "int", "u": "uint", "f": "float", "c": "complex"}


def values(shape, dtype):
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype.kind == "b":
        a = rng.integers(0, 2, n).astype(bool)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        a = rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True)
    elif dtype.kind == "f":
        a = rng.normal(0, 100, n)
    else:
        a = rng.normal(0, 100, n) + 1j * rng.normal(0, 100, n)
    return a.astype(dtype).reshape(shape)


def write(folder, name, a, chunks=None, blocks=None, **kwargs):
    path = os.path.join(folder, name)
    extra = {}
    if chunks is not None:
        extra["chunks"] = chunks
    if blocks is not None:
        extra["blocks"] = blocks
    blosc2.asarray(a, urlpath=path, mode="w", **extra, **kwargs)
    return path


def reference(path):
    """python-blosc2's reading of the array."""
    arr = blosc2.open(path)
    return arr[()] if arr.ndim == 0 else arr[:]


def check_same(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    check_equal(got.shape, want.shape, what + ": shape")
    check(got.dtype == want.dtype or got.dtype.newbyteorder("=") == want.dtype.newbyteorder("="),
          f"{what}: dtype {got.dtype} where {want.dtype} was expected")
    same = np.array_equal(got, want, equal_nan=want.dtype.kind in "fc")
    check(same, f"{what}: values differ from python-blosc2's")


# --- the arrays of one place ---

def make_place(h):
    """A folder of arrays: every dtype, 0-d to 5-d, edge chunks, sharded and plain
    views, a sparse frame, a resized array, named dimensions, types without a view.
    Returns (folder, {name: what python-blosc2 reads})."""
    folder = h.new_dir("place")
    names = []
    for dt in DTYPES:
        # Chunks a multiple of the blocks, square tiles (not c-blosc2's fast path), but
        # under 1 MiB: a plain view re-laid out from blocks; edge chunks in both dimensions.
        names.append(os.path.basename(write(folder, f"dt-{dt.replace('>', 'be-')}.b2nd", values((30, 21), dt),
                                            chunks=(12, 8), blocks=(4, 4))))
    shapes = {
        "d0.b2nd": (np.array(3.25), None, None),
        "empty.b2nd": (np.zeros((0, 5), np.float32), None, None),
        "d1.b2nd": (values((1000,), "f8"), (300,), (64,)),       # not a multiple: plain, re-laid out
        "d1-small.b2nd": (values((1000,), "i4"), (256,), (64,)),  # whole blocks, under 1 MiB: plain
        # Chunks of at least 1 MiB that are multiples of the blocks: shards of blocks.
        # Blocks that are whole rows of the chunk (1-d; 3-d rows): inner chunks are runs of blocks of up to 1 MiB.
        "d1-sharded.b2nd": (values((600000,), "i4"), (524288,), (65536,)),
        "d2-sharded.b2nd": (values((600, 520), "f4"), (512, 512), (128, 128)),
        "d2-sharded-be.b2nd": (values((300, 600), ">f8"), (256, 512), (64, 128)),
        "d2-sharded-u1.b2nd": (values((1100, 1030), "u1"), (1024, 1024), (256, 256)),
        "d3-rows-sharded.b2nd": (values((10, 256, 512), "u2"), (8, 256, 512), (1, 256, 512)),
        "d3-plain.b2nd": (values((7, 1001, 3), "f8"), (7, 1001, 3), (5, 1001, 3)),
        "d3-rows.b2nd": (values((20, 30, 40), "u2"), (10, 30, 40), (2, 30, 40)),  # the decoded chunk is C order
        "d4.b2nd": (values((6, 7, 9, 10), "f4"), (4, 5, 6, 7), (2, 5, 3, 7)),
        "d5.b2nd": (values((3, 4, 5, 6, 7), "i2"), (2, 3, 4, 5, 6), (1, 3, 2, 5, 3)),
        "d2-plain-tiles.b2nd": (values((100, 90), "u1"), (32, 30), (8, 7)),
    }
    for name, (a, chunks, blocks) in shapes.items():
        write(folder, name, a, chunks, blocks)
        names.append(name)
    # Default chunks and blocks, as python-blosc2 picks them.
    write(folder, "default.b2nd", values((300, 200), "f4"))
    names.append("default.b2nd")
    # A sparse frame (a directory holding chunks.b2frame).
    blosc2.asarray(values((50, 40), "i8"), urlpath=os.path.join(folder, "sparse.b2nd"), contiguous=False,
                   mode="w", chunks=(20, 20), blocks=(10, 10))
    names.append("sparse.b2nd")
    # A resized array: chunks added, and the new ones written.
    path = os.path.join(folder, "resized.b2nd")
    arr = blosc2.asarray(values((20, 10), "f4"), urlpath=path, mode="w", chunks=(8, 8), blocks=(4, 4))
    arr.resize((37, 10))
    arr[20:37] = values((17, 10), "f4")
    names.append("resized.b2nd")
    # Special chunks: zeros and uninitialized ones read as zeros, a NaN chunk as NaN.
    blosc2.zeros((1024, 600), dtype=np.float32, urlpath=os.path.join(folder, "zeros.b2nd"), mode="w",
                 chunks=(512, 512), blocks=(128, 128))
    blosc2.zeros((64, 64), dtype=np.float32, urlpath=os.path.join(folder, "zeros-small.b2nd"), mode="w",
                 chunks=(32, 32), blocks=(8, 8))
    blosc2.uninit((64, 64), dtype=np.float64, urlpath=os.path.join(folder, "uninit.b2nd"), mode="w",
                  chunks=(32, 32), blocks=(8, 8))
    blosc2.full((40, 30), np.nan, dtype=np.float64, urlpath=os.path.join(folder, "nan.b2nd"), mode="w",
                chunks=(20, 15), blocks=(5, 15))
    names += ["zeros.b2nd", "zeros-small.b2nd", "nan.b2nd"]
    # Dimension names as xarray-blosc2 records them, and attributes.
    path = write(folder, "named.b2nd", values((24, 36), "f4"), (12, 12), (4, 12))
    arr = blosc2.open(path, mode="a")
    arr.vlmeta["dims"] = ["time", "lat"]
    arr.vlmeta["units"] = "K"
    names.append("named.b2nd")
    # No Zarr v3 core type: no zarr.json.
    blosc2.asarray(np.array(["ab", "cde", "f"]), urlpath=os.path.join(folder, "strings.b2nd"), mode="w")
    blosc2.asarray(np.zeros(5, dtype=[("a", "<i4"), ("b", "<f8")]), urlpath=os.path.join(folder, "struct.b2nd"),
                   mode="w")
    # A subfolder of unrelated shapes for xarray.
    sub = os.path.join(folder, "xr")
    os.makedirs(sub)
    write(sub, "temperature.b2nd", values((24, 36), "f4"), (12, 12), (4, 12))
    write(sub, "series.b2nd", values((1000,), "f8"), (300,), (64,))
    write(sub, "cube.b2nd", values((5, 24, 7), "i2"), (5, 12, 7), (1, 12, 7))
    path = write(sub, "named.b2nd", values((24, 36), "f4"), (12, 12), (4, 12))
    arr = blosc2.open(path, mode="a")
    arr.vlmeta["dims"] = ["time", "lat"]
    arr.vlmeta["units"] = "K"
    expected = {name: reference(os.path.join(folder, name)) for name in names}
    expected["uninit.b2nd"] = np.zeros((64, 64), np.float64)  # the mount reads uninitialized chunks as zeros
    return folder, expected


def chunk_count(z):
    return int(np.prod([-(-s // c) for s, c in zip(z.shape, z.chunks)])) if z.ndim else 1


def arrays_read_exactly(h, mnt, expected):
    """zarr.open of each array: the whole array, one chunk, slices across chunk edges."""
    for name, want in sorted(expected.items()):
        path = os.path.join(mnt, name)
        z = zarr.open_array(path, mode="r")
        check_same(z[...], want, f"{name} [...]")
        if z.ndim and want.size:
            first = tuple(slice(0, c) for c in z.chunks)
            check_same(z[first], want[first], f"{name} first chunk")
            across = tuple(slice(max(c - 3, 0), min(c + 4, s)) for c, s in zip(z.chunks, z.shape))
            check_same(z[across], want[across], f"{name} across chunk edges")
            last = tuple(slice(s - 1, s) for s in z.shape)
            check_same(z[last], want[last], f"{name} last item")
        meta = json.loads(read_file(os.path.join(path, "zarr.json")))
        check_equal((meta["zarr_format"], meta["node_type"]), (3, "array"), f"{name} zarr.json")
        dtype = np.dtype(want.dtype)
        check_equal(meta["data_type"], V3_NAMES[dtype.kind] + ("" if dtype.kind == "b" else str(dtype.itemsize * 8)),
                    f"{name} data_type")
        codec = meta["codecs"][0]
        inner = codec["configuration"]["codecs"][0] if codec["name"] == "sharding_indexed" else codec
        if dtype.itemsize > 1:
            want_endian = "big" if dtype.byteorder == ">" else "little"
            check_equal(inner["configuration"]["endian"], want_endian, f"{name} endian")
        else:
            check("configuration" not in inner, f"{name}: a 1-byte type's bytes codec has no endian")


def views_are_sharded_or_plain(h, mnt):
    """Chunks of at least 1 MiB that are multiples of the blocks are shards (a
    file of the chunk plus a 16-byte index entry per inner chunk); others plain.
    An inner chunk is a block, or a run of whole-row blocks of up to 1 MiB."""
    for name, ninner, inner in [
            ("dt-f4.b2nd", 0, None), ("d1.b2nd", 0, None), ("d1-small.b2nd", 0, None),
            ("d1-sharded.b2nd", 2, [262144]), ("d2-sharded.b2nd", 16, [128, 128]),
            ("d2-sharded-be.b2nd", 16, [64, 128]), ("d2-sharded-u1.b2nd", 16, [256, 256]),
            ("d3-rows-sharded.b2nd", 2, [4, 256, 512]), ("d3-plain.b2nd", 0, None), ("d2-plain-tiles.b2nd", 0, None),
            ("d0.b2nd", 0, None)]:
        meta = json.loads(read_file(os.path.join(mnt, name, "zarr.json")))
        check_equal(meta["codecs"][0]["name"] == "sharding_indexed", ninner > 0, f"{name} sharded")
        if inner:
            check_equal(meta["codecs"][0]["configuration"]["chunk_shape"], inner, f"{name} inner chunk shape")
        if name == "d0.b2nd":
            continue
        chunk = meta["chunk_grid"]["configuration"]["chunk_shape"]
        itemsize = np.dtype(blosc2.open(os.path.join(h.place, name)).dtype).itemsize
        first = os.path.join(mnt, name, "c", *["0"] * len(chunk))
        check_equal(os.stat(first).st_size, int(np.prod(chunk)) * itemsize + 16 * ninner, f"{name}: c/0... size")
    d0 = os.path.join(mnt, "d0.b2nd")
    check(os.path.isfile(os.path.join(d0, "c")), "a 0-d array's one chunk is the file c")
    check_equal(np.frombuffer(read_file(os.path.join(d0, "c")), "<f8")[0], 3.25, "0-d chunk c")
    check_equal(sorted(os.listdir(os.path.join(mnt, "d3-plain.b2nd", "c"))), ["0"], "c/ of a one-chunk 3-d array")
    check_equal(sorted(os.listdir(os.path.join(mnt, "dt-f4.b2nd", "c", "1")), key=int), ["0", "1", "2"],
                "c/1/ of a 3 x 3 grid")
    check_equal(os.listdir(os.path.join(mnt, "empty.b2nd", "c")), [], "c/ of an empty array")
    # The tree's other files stay.
    listing = set(os.listdir(os.path.join(mnt, "dt-f4.b2nd")))
    check({"zarr.json", "c", "zarr2", "array.npy", "chunks", "frame.json"} <= listing, f"array directory: {listing}")
    for name in ("strings.b2nd", "struct.b2nd"):
        check(not os.path.exists(os.path.join(mnt, name, "zarr.json")), f"{name}: no Zarr v3 type, no zarr.json")
        check(os.path.exists(os.path.join(mnt, name, "array.npy")), f"{name}: array.npy stays")


def keys_out_of_range(h, mnt):
    base = os.path.join(mnt, "dt-f4.b2nd")
    for key in ("c/3/0", "c/0/3", "c/0", "c/0/0/0", "c/00/1", "c/-1/0", "c/x/0", "zarr2/3.0", "zarr2/0", "zarr2/0.0.0",
                "zarr2/00.1"):
        path = os.path.join(base, key)
        try:
            with open(path, "rb") as f:
                f.read(1)
        except OSError as e:
            check(e.errno in (errno.ENOENT, errno.ENOTDIR, errno.EISDIR), f"{key}: {e}")
            if key != "c/0":
                check(e.errno in (errno.ENOENT, errno.ENOTDIR), f"{key}: {e}")
            continue
        raise TestFailure(f"{key} opened as a file")


def special_chunks_cost_no_decode(h, mnt):
    """A sharded chunk stored as zeros (or uninitialized) is a shard whose index says
    "fill value": zarr-python reads none of its bytes and nothing is decoded."""
    stats = os.path.join(mnt, "zeros.b2nd")
    before = h.cache_stats(stats)["decoded_blocks"]
    z = zarr.open_array(stats, mode="r")
    check_same(z[:], np.zeros((1024, 600), np.float32), "zeros")
    check_equal(h.cache_stats(stats)["decoded_blocks"] - before, 0, "blocks decoded reading a zeros array")
    index = read_file(os.path.join(stats, "c", "0", "0"))[-16:]
    check_equal(index, b"\xff" * 16, "a zeros chunk's last index entry")
    # Plain chunks of zeros are made without a decode too.
    small = os.path.join(mnt, "zeros-small.b2nd")
    before = h.cache_stats(small)["decoded_blocks"]
    check_same(zarr.open_array(small, mode="r")[:], np.zeros((64, 64), np.float32), "small zeros")
    check_equal(h.cache_stats(small)["decoded_blocks"] - before, 0, "blocks decoded reading a plain zeros array")


def partial_shard_reads(h):
    """A few inner chunks of a shard decode only their blocks."""
    folder = h.new_dir("partial")
    path = write(folder, "big.b2nd", values((1000, 1000), "f4"), (512, 512), (64, 64))  # 1 MiB chunks
    mnt = h.mount(path, ["-o", "ro"])
    try:
        z = zarr.open_array(mnt, mode="r")
        want = blosc2.open(path)[220:230, 320:330]
        before = h.cache_stats(mnt)["decoded_blocks"]
        check_same(z[220:230, 320:330], want, "a slice inside one block")
        decoded = h.cache_stats(mnt)["decoded_blocks"] - before
        check_equal(decoded, 1, "blocks decoded for a slice inside one block (64 per chunk)")
        before = h.cache_stats(mnt)["decoded_blocks"]
        check_same(z[:, 333], blosc2.open(path)[:, 333], "a column")
        decoded = h.cache_stats(mnt)["decoded_blocks"] - before
        check(decoded <= 2 * 16 + 4, f"{decoded} blocks decoded for a column of 16 blocks")
    finally:
        h.unmount(mnt)
    # Inner chunks of 400,000 bytes (runs of 5 blocks of 20 x 1000 f4, 3 to a
    # chunk): Python's buffered read of one must not fill a buffer past it into
    # the next block, so st_blksize divides it.
    path = write(folder, "runs.b2nd", values((600, 1000), "f4"), (300, 1000), (20, 1000))
    mnt = h.mount(path, ["-o", "ro"])
    try:
        z = zarr.open_array(mnt, mode="r")
        check_equal(z.metadata.codecs[0].chunk_shape, (100, 1000), "runs.b2nd inner chunk shape")
        st = os.stat(os.path.join(mnt, "c", "0", "0"))
        check_equal(st.st_blksize, 128, "st_blksize of a shard of 400,000-byte inner chunks")
        before = h.cache_stats(mnt)["decoded_blocks"]
        check_same(z[400:410, 200:300], blosc2.open(path)[400:410, 200:300], "a slice of runs.b2nd")
        check_equal(h.cache_stats(mnt)["decoded_blocks"] - before, 5, "blocks decoded for one inner run of 5")
    finally:
        h.unmount(mnt)


def other_readers(h, mnt, expected):
    """tensorstore (zarr3 driver, C++), dask, and GDAL on the v2 view."""
    for name, want in sorted(expected.items()):
        if name in ("empty.b2nd",):
            continue
        t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": os.path.join(mnt, name) + "/"}},
                    read=True).result()
        check_same(t.read().result(), want, f"tensorstore {name}")
    z = da.from_zarr(os.path.join(mnt, "d4.b2nd"))
    got = float(z.sum().compute(scheduler="threads", num_workers=2))
    want = float(expected["d4.b2nd"].astype(np.float64).sum())
    check(abs(got - want) <= 1e-3 * max(1.0, abs(want)), f"dask sum {got} where {want}")
    # zarr2/ is a v2 array: zarr-python reads it too.
    for name in ("dt-i2.b2nd", "d1.b2nd", "d3-plain.b2nd", "d0.b2nd", "d2-sharded.b2nd", "d3-rows-sharded.b2nd"):
        z2 = zarr.open_array(os.path.join(mnt, name, "zarr2"), mode="r", zarr_format=2)
        check_same(z2[...], expected[name], f"zarr v2 view {name}")


def gdal_reads_v2(h, mnt, expected):
    """GDAL 3.10 (rasterio 1.4.4's wheel) reads the v2 view of 2-d arrays exactly."""
    script = r"""
import sys, json, numpy as np, rasterio
out = {}
for path in sys.argv[1:]:
    with rasterio.open('ZARR:"%s"' % path) as src:
        a = src.read(1)
        out[path] = [list(a.shape), a.dtype.str, a.tobytes().hex(), src.nodata]
print(json.dumps(out))
"""
    names = ["dt-f4.b2nd", "dt-u2.b2nd", "dt-i4.b2nd", "dt-be-f8.b2nd", "dt-u1.b2nd", "d2-plain-tiles.b2nd",
             "named.b2nd", "d2-sharded-be.b2nd"]
    paths = [os.path.join(mnt, n, "zarr2") for n in names]
    r = subprocess.run([sys.executable, "-c", script] + paths, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise TestFailure(f"rasterio failed: {r.stderr.strip()[-2000:]}")
    got = json.loads(r.stdout)
    for name, path in zip(names, paths):
        shape, dtype, data, nodata = got[path]
        want = expected[name]
        a = np.frombuffer(bytes.fromhex(data), dtype=np.dtype(dtype)).reshape(shape)
        check_same(a, want, f"GDAL {name}")
        check(nodata is None, f"GDAL {name}: nodata {nodata}, none expected")


def walk_members(g, not_nodes):
    """g.members(max_depth=None). zarr-python warns for each entry of a group's
    directory that is neither an array nor a group (docs/zarr.md): every warning
    must be that one, for an entry named in not_nodes."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        members = dict(g.members(max_depth=None))
    for w in caught:
        m = re.fullmatch(r"Object at (.+) is not recognized as a component of a Zarr hierarchy\.", str(w.message))
        check(m is not None and m.group(1).rsplit("/", 1)[-1] in not_nodes,
              f"zarr-python warned: {w.message} (expected only for {sorted(not_nodes)})")
    return members


def groups_walk(h, mnt, expected):
    """zarr.open_group of the mount walks the place: folders are groups, datasets arrays."""
    root = json.loads(read_file(os.path.join(mnt, "zarr.json")))
    check_equal(root, {"zarr_format": 3, "node_type": "group", "attributes": {}}, "the place's zarr.json")
    g = zarr.open_group(mnt, mode="r")
    members = walk_members(g, {"collection.json", "strings.b2nd", "struct.b2nd"})
    for name, want in expected.items():
        check(name in members, f"{name} is not a member of the group: {sorted(members)[:20]}")
        check_same(members[name][...], want, f"group member {name}")
    check(isinstance(members.get("xr"), zarr.Group), "the subfolder xr is a group")
    check("xr/series.b2nd" in members, "xr/series.b2nd is a member")
    check("strings.b2nd" not in members, "strings.b2nd (no Zarr type) is not a member")


def xarray_opens_folder(h, mnt):
    """xr.open_zarr of a folder of arrays of unrelated shapes, with and without dask."""
    sub = os.path.join(mnt, "xr")
    for chunks in ({}, None):
        ds = xr.open_zarr(sub, consolidated=False, chunks=chunks)
        check_equal(sorted(ds.data_vars), ["cube.b2nd", "named.b2nd", "series.b2nd", "temperature.b2nd"],
                    "data variables")
        check_equal(ds["named.b2nd"].dims, ("time", "lat"), "xarray-blosc2's dims come back")
        check_equal(ds["named.b2nd"].attrs.get("units"), "K", "attributes reach xarray")
        check_equal(ds["series.b2nd"].dims, ("dim0_1000",), "a 1-d array's dimension")
        for name in ds.data_vars:
            check_same(ds[name].values, reference(os.path.join(h.place, "xr", name)), f"xarray {name}")
        ds.close()


def on_place(body):
    """A check of the place, on a mount of its own (the harness unmounts after each test)."""
    def run(h, folder, expected):
        mnt = h.mount(folder, ["-o", "ro"])
        if expected is None:
            body(h, mnt)
        else:
            body(h, mnt, expected)
    return run


def place_tests(h):
    folder, expected = make_place(h)
    h.place = folder
    for name, body, wants in [
            ("every dtype and shape: zarr.open reads python-blosc2's values", arrays_read_exactly, True),
            ("sharded and plain views, 0-d, empty, the tree's files stay", views_are_sharded_or_plain, False),
            ("keys out of range or of the wrong form: ENOENT", keys_out_of_range, False),
            ("special chunks cost no decode", special_chunks_cost_no_decode, False),
            ("tensorstore, dask and the v2 view", other_readers, True),
            ("GDAL (rasterio) reads the v2 view", gdal_reads_v2, True),
            ("zarr.open_group walks the place", groups_walk, True),
            ("xarray opens a folder of unrelated shapes", xarray_opens_folder, False)]:
        h.test(name, on_place(body), h, folder, expected if wants else None)


def codecs_and_filters(h):
    """Every codec and filter c-blosc2 has inside (plugin_frames.py's builtin group)."""
    outdir = h.new_dir("codecs")
    r = subprocess.run([sys.executable, os.path.join(HERE, "plugin_frames.py"), "builtin", outdir],
                       capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise TestFailure(f"plugin_frames.py builtin failed: {r.stderr.strip()[-2000:]}")
    entries = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    check(len(entries) >= 10, f"only {len(entries)} frames written")
    mnt = h.mount(outdir, ["-o", "ro"])
    try:
        seen = 0
        for e in entries:
            if not e.get("b2nd") or not e.get("readable") or "expect" not in e:
                continue
            want = np.load(e["expect"])["array"]
            z = zarr.open_array(os.path.join(mnt, os.path.basename(e["path"])), mode="r")
            check_same(z[...], want, f"{e['name']} ({e['codec']}, {e['filters']})")
            seen += 1
        check(seen >= 10, f"only {seen} frames compared")
    finally:
        h.unmount(mnt)


def store_groups(h):
    """A TreeStore: its root and groups are Zarr groups, its leaves arrays."""
    path = os.path.join(h.new_dir("store"), "s.b2z")
    values_by_key = {"/a": values((30, 20), "i4"), "/g/b": values((4000,), "f8"),
                     "/g/h/c": values((5, 6, 7), "u1")}
    with blosc2.TreeStore(path, mode="w", threshold=1000) as s:
        for key, v in values_by_key.items():
            s[key] = v
    mnt = h.mount(path, ["-o", "ro"])
    try:
        for group in ("", "g", "g/h"):
            meta = json.loads(read_file(os.path.join(mnt, group, "zarr.json")))
            check_equal(meta["node_type"], "group", f"{group or '/'} zarr.json")
        g = zarr.open_group(mnt, mode="r")
        members = walk_members(g, {"store.json", "attrs"})
        for key, v in values_by_key.items():
            check(key.strip("/") in members, f"{key} not a member: {sorted(members)}")
            check_same(members[key.strip("/")][...], v, f"store leaf {key}")
        ds = xr.open_zarr(os.path.join(mnt, "g"), consolidated=False, chunks=None)
        check_same(ds["b"].values, values_by_key["/g/b"], "xarray of a store group")
    finally:
        h.unmount(mnt)


def huge_grid(h):
    """2.5 x 10^8 chunks: c/ is listed page by page from the cookie, nothing held;
    any key is found directly; out of range ENOENT."""
    folder = h.new_dir("huge")
    path = os.path.join(folder, "huge.b2nd")
    # 2.5 x 10^8 chunks: c-blosc2 builds no frame of many more (its index must stay below 2 GiB).
    blosc2.zeros((2 * 10 ** 9,), dtype=np.uint8, urlpath=path, mode="w", chunks=(8,), blocks=(8,))
    mnt = h.mount(path, ["-o", "ro"])
    try:
        with os.scandir(os.path.join(mnt, "c")) as it:
            first = [e.name for _, e in zip(range(1000), it)]
        check_equal(first[:3] + first[-1:], ["0", "1", "2", "999"], "the first page of c/")
        check_equal(os.stat(os.path.join(mnt, "c", "249999999")).st_size, 8, "the last chunk's size (plain)")
        for key in ("c/250000000", "c/0/0", "zarr2/250000000"):
            try:
                os.stat(os.path.join(mnt, key))
            except OSError as e:
                check(e.errno in (errno.ENOENT, errno.ENOTDIR), f"{key}: {e}")
                continue
            raise TestFailure(f"{key} exists")
        z = zarr.open_array(mnt, mode="r")
        check_same(z[2 * 10 ** 9 - 10:], np.zeros(10, np.uint8), "the last 10 items")
    finally:
        h.unmount(mnt)


def remote_nginx(h):
    """A web index served by nginx (a collection over HTTP) is a Zarr group like a local
    folder; one chunk of a remote array of 10,000 chunks costs about one request."""
    root = h.new_dir("served")
    lake = os.path.join(root, "lake")
    os.makedirs(os.path.join(lake, "sub"))
    many = write(lake, "many.b2nd", values((1000, 1000), "f4"), (10, 10), (5, 5))  # 10,000 chunks
    small = write(os.path.join(lake, "sub"), "small.b2nd", values((30, 20), "i2"), (10, 10), (5, 10))
    with Nginx(root, os.path.join(h.workdir, "nginx"), autoindex="html") as nginx:
        mnt = h.mount(f"{nginx.url}/lake/")
        check_equal(json.loads(read_file(os.path.join(mnt, "sub", "zarr.json")))["node_type"], "group",
                    "a remote folder's zarr.json")
        g = zarr.open_group(mnt, mode="r")
        members = walk_members(g, {"collection.json"})
        check_same(members["sub/small.b2nd"][...], reference(small), "a remote collection's array")
        ds = xr.open_zarr(os.path.join(mnt, "sub"), consolidated=False, chunks=None)
        check_same(ds["small.b2nd"].values, reference(small), "xarray over HTTP")
        single = h.mount(f"{nginx.url}/lake/many.b2nd")
        z = zarr.open_array(single, mode="r")
        before = len(nginx.requests())
        check_same(z[505:507, 705:707], blosc2.open(many)[505:507, 705:707], "one chunk over HTTP")
        time.sleep(0.2)  # nginx logs a request after answering it
        made = nginx.requests()[before:]
        # None when the chunk lay in a range the mount fetched already (the frame's tail).
        check(len(made) <= 2, f"{len(made)} requests for one chunk: {made}")


def s3_prefix(h):
    """An S3 prefix (SeaweedFS) of arrays in folders is a Zarr group too."""
    root = h.new_dir("s3folder")
    os.makedirs(os.path.join(root, "sub"))
    a = write(root, "a.b2nd", values((40, 30), "f8"), (16, 16), (8, 8))
    b = write(os.path.join(root, "sub"), "b.b2nd", values((100,), "u2"), (30,), (7,))
    key, secret = "zarr-key", "zarr-secret-0123456789"
    with SeaweedS3(os.path.join(h.workdir, "s3"), key, secret) as s3:
        s3.create_bucket("zarrlake")
        s3.put_tree("zarrlake", "lake", root)
        mnt = h.new_dir()
        env = dict(os.environ, AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret)
        r = subprocess.run([h.binary, "-o", f"s3_endpoint={s3.url}", "s3://zarrlake/lake/", mnt], env=env,
                           capture_output=True, text=True, timeout=120)
        check_equal(r.returncode, 0, f"mount of an S3 prefix: {r.stderr}")
        h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
        g = zarr.open_group(mnt, mode="r")
        members = walk_members(g, {"collection.json"})
        check_same(members["a.b2nd"][...], reference(a), "an S3 array")
        check_same(members["sub/b.b2nd"][10:50], reference(b)[10:50], "an S3 array in a folder")
        h.unmount(mnt)


def main():
    h = Harness("Zarr view", watchdog_seconds=900)
    h.require_fuse()
    place_tests(h)
    h.test("every codec and filter", codecs_and_filters, h)
    h.test("partial shard reads decode only the asked blocks", partial_shard_reads, h)
    h.test("store groups: zarr.open_group and xarray", store_groups, h)
    h.test("nginx: a remote collection is a group; one inner chunk, one request", remote_nginx, h)
    h.test("SeaweedFS: an S3 prefix is a group", s3_prefix, h)
    h.test("a 2.5 x 10^8-chunk grid: bounded listing, direct lookups", huge_grid, h)
    h.finish()


if __name__ == "__main__":
    main()
