"""N-d arrays as python-blosc2 writes them, made at run time in the work directory:
every dtype form python-blosc2 stores in the b2nd metalayer (dtype.str, and str(dtype)
of structured dtypes in list and dict form, with padding, subarrays, nesting, titles),
0-d to 16-d shapes, the 5-element b2nd form without a dtype, and <U arrays, which
python-blosc2 shuffles by 4 bytes (filters_meta). Each is mounted, and
np.load(array.npy), with and without mmap_mode, must equal blosc2.open(path)[:]
(dtype and bytes). Writes through the mount to a <U array must read back in
python-blosc2."""

import os
import struct
import sys

import blosc2
import numpy as np
from blosc2 import blosc2_ext

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness, check, check_equal, read_file  # noqa: E402
from writes import frame_state, sh  # noqa: E402
from python_blosc2_readback import check_reads_back_in_python_blosc2  # noqa: E402

STRUCTURED = {
    "list form, unprefixed S10 and ?": np.dtype([("a", "<i4"), ("b", "<f8"), ("c", "S10"), ("d", "?")]),
    "dict form with padding": np.dtype({"names": ["a", "b"], "formats": ["<i4", "<f8"], "offsets": [0, 8],
                                        "itemsize": 20}),
    "aligned (dict form)": np.dtype([("a", "u1"), ("b", "<f8"), ("c", "<i2")], align=True),
    "subarray fields": np.dtype([("x", "<f4", (3,)), ("y", "<i2", (2, 2))]),
    "nested struct": np.dtype([("p", [("q", "<i4"), ("r", "u1")]), ("s", "<f8")]),
    "out-of-order offsets, subarray (dict form)": np.dtype({"names": ["a", "b"], "formats": [("<f4", (2,)), "u1"],
                                                            "offsets": [4, 0], "itemsize": 12}),
    "nested dict form": np.dtype({"names": ["a", "b"],
                                  "formats": [np.dtype({"names": ["q"], "formats": ["<i2"], "offsets": [2],
                                                        "itemsize": 6}), "u1"],
                                  "offsets": [0, 8], "itemsize": 12}),
    "titles (dict form)": np.dtype({"names": ["a", "b"], "formats": ["<i4", "<f8"], "titles": ["A title", None],
                                    "offsets": [0, 8], "itemsize": 16}),
    "names with quotes and non-latin-1": np.dtype([("it's", "<i4"), ("\u03bb", "<f4"), ("na\u00efve", "u1")]),
    "datetime and big-endian complex fields": np.dtype([("t", "<M8[ns]"), ("z", ">c8")]),
}
SIMPLE = ["<f8", ">f4", "|b1", "<c16", "<U6", "|S6", "<M8[ns]", "<m8[us]", "|u1", "<i2", ">i8", "<f2", "|V5"]


def sample(dtype, shape, seed=0):
    """Deterministic, non-trivial content of any dtype (bytes from a generator,
    made valid where NumPy cares: bools 0/1, unicode code points)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=n * dtype.itemsize, dtype=np.uint8)
    arr = raw.view(dtype).reshape(shape) if dtype.itemsize else np.zeros(shape, dtype)
    return fix_values(arr, rng)


def fix_values(arr, rng):
    dt = arr.dtype
    if dt.names:
        for name in dt.names:
            arr[name] = fix_values(arr[name].copy(), rng)
        return arr
    if dt.subdtype:
        return fix_values(arr, rng)
    if dt.kind == "b":
        return (arr.view(np.uint8) & 1).view(dt)
    if dt.kind == "U":
        chars = rng.integers(0x20, 0x3000, size=arr.size * (dt.itemsize // 4), dtype=np.uint32)
        lengths = rng.integers(0, dt.itemsize // 4 + 1, size=arr.size)
        chars = chars.reshape(arr.size, dt.itemsize // 4)
        chars[np.arange(dt.itemsize // 4)[None, :] >= lengths[:, None]] = 0
        return chars.astype("<u4").view(dt.newbyteorder("<")).astype(dt).reshape(arr.shape)
    return arr


def save(h, name, arr, how="empty", **kwargs):
    """Saves arr with python-blosc2. The two ways store different dtype strings for the
    same dtype: blosc2.empty(dtype=np.dtype) stores str(dtype) (the dict form for padded
    structs, '|V5'), blosc2.asarray(ndarray) goes through dtype.descr (padding becomes
    fields named 'f1' of type 'V4'; 'V5' becomes [('f0', 'V5')])."""
    path = os.path.join(h.new_dir("arrays"), name + ".b2nd")
    if how == "asarray":
        blosc2.asarray(arr, urlpath=path, mode="w", **kwargs)
    else:
        out = blosc2.empty(arr.shape, dtype=arr.dtype, urlpath=path, mode="w", **kwargs)
        out[...] = arr
        del out
    return path


def check_npy(h, path, what):
    """array.npy of a mount of path, with and without mmap_mode, equals blosc2.open(path)[:]."""
    want = blosc2.open(path, mode="r")[...]
    info = h.info(path)
    check(not info["array"]["dtype_mismatch"], f"{what}: frame.json says dtype_mismatch: {info['array']}")
    mnt = h.mount(path, ["-o", "ro"])
    try:
        npy = os.path.join(mnt, "array.npy")
        check_equal(os.stat(npy).st_size, info["array"]["npy_size"], f"{what}: array.npy size")
        for mode in (None, "r"):
            got = np.load(npy, mmap_mode=mode, allow_pickle=False)
            check_equal(got.shape, want.shape, f"{what}: shape (mmap_mode={mode})")
            if want.dtype.names:
                # Fields out of offset order cannot be a .npy descr (np.save refuses them):
                # array.npy lists them by offset, so only the order of names may differ.
                check_equal(got.dtype.itemsize, want.dtype.itemsize, f"{what}: itemsize (mmap_mode={mode})")
                check_equal(sorted(got.dtype.names), sorted(want.dtype.names), f"{what}: field names")
                for field in want.dtype.names:
                    # Same bytes (below) and the same field at the same offset: the same values.
                    # (A field view's tobytes() leaves nested padding uninitialized: not compared.)
                    check_equal(got.dtype.fields[field], want.dtype.fields[field], f"{what}: field {field!r}")
                offsets = [want.dtype.fields[n][1] for n in want.dtype.names]
                if offsets == sorted(offsets):
                    check_equal(got.dtype, want.dtype, f"{what}: dtype (mmap_mode={mode})")
            else:
                check_equal(got.dtype, want.dtype, f"{what}: dtype (mmap_mode={mode})")
            check(got.tobytes() == want.tobytes(), f"{what}: contents differ (mmap_mode={mode})")
            del got
    finally:
        h.unmount(mnt)
    return info


def simple_dtypes(h):
    for dt in SIMPLE:
        arr = sample(dt, (37, 11), seed=len(dt))
        path = save(h, "simple", arr, chunks=(16, 8), blocks=(5, 3))
        check_equal(stored_dtype(path), np.dtype(dt).str, f"{dt}: test setup: dtype stored")
        info = check_npy(h, path, dt)
        check_equal(info["array"]["npy_descr"], np.dtype(dt).str, f"{dt}: npy_descr")
        if dt == "|V5":  # asarray stores it as a one-field struct
            path = save(h, "simple", arr, how="asarray", chunks=(16, 8), blocks=(5, 3))
            check_equal(stored_dtype(path), "[('f0', 'V5')]", "|V5 by asarray: test setup: dtype stored")
            check_npy(h, path, "|V5 by asarray")


def structured_dtypes(h):
    for what, dt in STRUCTURED.items():
        arr = sample(dt, (23, 5), seed=dt.itemsize)
        path = save(h, "struct", arr, chunks=(10, 4), blocks=(3, 2))
        stored = stored_dtype(path)
        check_equal(stored, str(dt), f"{what}: test setup: python-blosc2 stores str(dtype)")
        info = check_npy(h, path, f"{what} ({stored})")
        check_equal(info["array"]["itemsize"], dt.itemsize, f"{what}: itemsize")
        # asarray stores the list form of dtype.descr, padding as named void fields.
        path = save(h, "struct", arr, how="asarray", chunks=(10, 4), blocks=(3, 2))
        check_npy(h, path, f"{what} by asarray ({stored_dtype(path)})")


def shapes(h):
    for ndim in range(0, 17):
        shape = tuple(3 if i % 5 == 0 else 2 for i in range(ndim))
        chunks = tuple(2 if d == 3 else 1 if i % 3 == 1 else 2 for i, d in enumerate(shape))
        blocks = tuple(1 if c == 2 and i % 2 else c for i, c in enumerate(chunks))
        arr = sample("<f8", shape, seed=ndim)
        kwargs = {"chunks": chunks, "blocks": blocks} if ndim else {}
        path = save(h, f"d{ndim}", arr, **kwargs)
        got = blosc2.open(path)
        check_equal(got.ndim, ndim, f"{ndim}-d: test setup")
        meta = read_meta_bytes(path)
        if ndim == 16:  # c-blosc2's marker 0x90 + 16: not msgpack, read by position
            check_equal(meta[3], 0xA0, "16-d: test setup: array marker")
        info = check_npy(h, path, f"{ndim}-d {shape}")
        check_equal(info["array"]["shape"], list(shape), f"{ndim}-d: frame.json shape")
        check_equal(info["metalayers"][0]["content"]["ndim"], ndim, f"{ndim}-d: frame.json ndim")


def read_meta_bytes(path):
    """The b2nd metalayer's bytes. The NDArray must outlive its schunk's use:
    python-blosc2 frees the C array with the Python object."""
    arr = blosc2.open(path, mode="r")
    content = blosc2_ext.meta__getitem__(arr.schunk, "b2nd")
    del arr
    return content


def stored_dtype(path):
    """The dtype string of the b2nd metalayer (its last element), by position."""
    meta = read_meta_bytes(path)
    offset = 4 + meta[2] * 9 + 2 * (1 + meta[2] * 5) + 1
    check_equal(meta[offset], 0xDB, "test setup: str32 dtype marker")
    (length,) = struct.unpack(">i", meta[offset + 1:offset + 5])
    return meta[offset + 5:offset + 5 + length].decode()


def lossy_nested_aligned(h):
    """str(dtype) of a nested aligned struct loses the inner padding (9-byte items written as
    a 6-byte dtype), so python-blosc2 cannot read its own array back; array.npy shows the
    items raw, |V9, and frame.json says dtype_mismatch."""
    dt = np.dtype([("p", np.dtype([("q", "u1"), ("r", "<i4")], align=True)), ("s", "u1")])
    arr = sample(dt, (6,), seed=9)
    path = os.path.join(h.new_dir("arrays"), "lossy.b2nd")
    out = blosc2.empty(arr.shape, dtype=dt, urlpath=path, mode="w", chunks=(4,), blocks=(2,))
    # python-blosc2 cannot assign items of that dtype either: fill the chunks directly.
    padded = np.concatenate([arr, np.zeros(2, dt)]).tobytes()
    for i in range(2):
        out.schunk.update_data(i, padded[i * 36:(i + 1) * 36], copy=True)
    del out
    check_equal(stored_dtype(path), "[('p', [('q', 'u1'), ('r', '<i4')]), ('s', 'u1')]", "test setup: stored dtype")
    info = h.info(path)
    check_equal((info["array"]["npy_descr"], info["array"]["dtype_mismatch"]), ("|V9", True), "frame.json array")
    mnt = h.mount(path, ["-o", "ro"])
    try:
        got = np.load(os.path.join(mnt, "array.npy"), mmap_mode="r")
        check_equal(got.dtype, np.dtype("V9"), "array.npy dtype")
        check(got.tobytes() == padded[:54], "array.npy holds other bytes than the chunks stored")
        del got
    finally:
        h.unmount(mnt)


def five_element_form(h):
    """A b2nd metalayer in the 5-element caterva form (no dtype_format, no dtype), as in
    c-blosc2's test data of 2023-01. python-blosc2 cannot write it: make the array with
    python-blosc2, copy its chunks into an SChunk whose b2nd metalayer is a placeholder of
    the same length, then put the 5-element bytes in the placeholder's place."""
    shape, chunks, blocks = (9, 7), (4, 4), (2, 3)
    arr = np.arange(63, dtype="<f8").reshape(shape) * 1.5
    src = blosc2.asarray(arr, chunks=chunks, blocks=blocks)
    meta = bytes([0x95, 0, 2, 0x92]) + b"".join(b"\xd3" + struct.pack(">q", d) for d in shape)
    for dims in (chunks, blocks):
        meta += bytes([0x92]) + b"".join(b"\xd2" + struct.pack(">i", d) for d in dims)
    placeholder = bytes(range(0x41, 0x41 + len(meta) - 2))  # msgpack bin8: c4 len bytes
    packed = bytes([0xC4, len(placeholder)]) + placeholder
    check_equal(len(packed), len(meta), "test setup: placeholder length")
    path = os.path.join(h.new_dir("arrays"), "five.b2nd")
    sc = blosc2.SChunk(chunksize=src.schunk.chunksize, urlpath=path, mode="w", contiguous=True,
                       cparams={"typesize": 8, "blocksize": src.schunk.blocksize}, meta={"b2nd": placeholder})
    for i in range(src.schunk.nchunks):
        sc.append_data(src.schunk.decompress_chunk(i))
    del sc
    with open(path, "r+b") as f:
        frame = f.read()
        check_equal(frame.count(packed), 1, "test setup: placeholder found once")
        f.seek(frame.index(packed))
        f.write(meta)
    opened = blosc2.open(path, mode="r")
    check(isinstance(opened, blosc2.NDArray), "test setup: python-blosc2 opens the 5-element form as an array")
    check_equal(opened.dtype, np.dtype("S8"), "test setup: python-blosc2's dtype without one stored")
    info = check_npy(h, path, "5-element b2nd form")
    check_equal(info["array"]["dtype"], None, "frame.json dtype")
    check_equal(info["array"]["npy_descr"], "|S8", "npy_descr without a dtype")
    check(np.frombuffer(opened[...].tobytes(), "<f8").reshape(shape).tolist() == arr.tolist(),
          "test setup: the values")


def unicode_shuffle_by_four(h):
    """python-blosc2 stores <U arrays with SHUFFLE and filters_meta 4: reading must unshuffle
    by 4 bytes, and chunks the mount recompresses must be shuffled by 4 too, or python-blosc2
    reads them wrong."""
    arr = sample("<U6", (50, 7), seed=6)
    path = save(h, "unicode", arr, chunks=(20, 7), blocks=(5, 7))
    opened = blosc2.open(path, mode="r")
    cparams = opened.schunk.cparams
    del opened
    check_equal(list(cparams.filters_meta)[5], 4, "test setup: filters_meta")
    check_equal(cparams.filters[5], blosc2.Filter.SHUFFLE, "test setup: filters")
    info = check_npy(h, path, "<U6")
    check_equal(info["filters_meta"], [0, 0, 0, 0, 0, 4], "frame.json filters_meta")

    # Overwrite the first item of chunk 1 through chunks/N and, in another mount, append a chunk.
    new = np.array(["\u00e9t\u00e9", "zz"], dtype="<U6")
    mnt = h.mount(path)
    with open(os.path.join(mnt, "chunks", "00000001"), "r+b") as f:
        f.write(new.tobytes())
    raw = read_file(os.path.join(mnt, "raw", "00000001.chunk"))
    h.unmount(mnt)
    check_equal(raw[29], 4, "the recompressed chunk's filters_meta[5]")
    after = blosc2.open(path, mode="r")[:]
    want = arr.copy()
    want[20, 0:2] = new
    check(after.tobytes() == want.tobytes(), "python-blosc2 reads the chunk written through the mount wrong")
    state = frame_state(h, path)
    check_reads_back_in_python_blosc2(path, state, "<U6 array after a chunk write")
    check_npy(h, path, "<U6 after the write")


def unicode_data_write(h):
    """The same through data (an N-d array's chunks one after the other) with dd."""
    arr = sample("<U3", (64,), seed=3)
    path = save(h, "unicode-data", arr, chunks=(16,), blocks=(4,))
    mnt = h.mount(path)
    patch = os.path.join(h.workdir, "patch.bin")
    new = np.array(["abc", "\u4e2d\u6587", "x"], dtype="<U3")
    with open(patch, "wb") as f:
        f.write(new.tobytes())
    sh(f"dd if={patch} of=data bs=12 seek=30 conv=notrunc status=none", cwd=mnt)
    h.unmount(mnt)
    want = arr.copy()
    want[30:33] = new
    check(blosc2.open(path, mode="r")[:].tobytes() == want.tobytes(), "python-blosc2 reads the data write wrong")
    check_npy(h, path, "<U3 after a data write")


def main():
    h = Harness("N-d arrays from python-blosc2", watchdog_seconds=300)
    h.require_fuse()
    print(f"python-blosc2 {blosc2.__version__}, NumPy {np.__version__}", flush=True)
    h.test(f"dtypes {', '.join(SIMPLE)}: array.npy equals blosc2.open()[:]", simple_dtypes, h)
    h.test("structured dtypes, list and dict forms: array.npy equals blosc2.open()[:]", structured_dtypes, h)
    h.test("0-d to 16-d arrays: array.npy equals blosc2.open()[:]", shapes, h)
    h.test("a nested aligned struct python-blosc2 cannot read back shows as |V<typesize>", lossy_nested_aligned, h)
    h.test("the 5-element b2nd form without dtype shows as S<typesize>", five_element_form, h)
    h.test("<U arrays (shuffle by filters_meta 4): read, chunk write read back in python-blosc2",
           unicode_shuffle_by_four, h)
    h.test("<U array: dd into data reads back in python-blosc2", unicode_data_write, h)
    h.finish()


if __name__ == "__main__":
    main()
