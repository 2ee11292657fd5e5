"""A frame written through the mount, read back with python-blosc2 (c-blosc2 3.3.5
inside): it must open and hold what the mount showed. `shown` is a state from
writes.frame_state (chunks, data, vlmeta, meta, npy)."""

import io

import blosc2
import numpy as np
from blosc2 import blosc2_ext

from harness import check, check_equal


def raw_vlmeta(schunk, name):
    """A vlmetalayer's bytes as stored, without python-blosc2's msgpack decoding."""
    return blosc2_ext.vlmeta.get_vlmeta(schunk.vlmeta, name)


def check_reads_back_in_python_blosc2(frame, shown, what=""):
    what = what or frame
    opened = blosc2.open(frame, mode="r")
    schunk = opened.schunk if isinstance(opened, blosc2.NDArray) else opened
    check(isinstance(schunk, blosc2.SChunk), f"{what}: blosc2.open gave a {type(opened).__name__}")
    check_equal(schunk.nchunks, len(shown["chunks"]), f"{what}: number of chunks in python-blosc2")
    for i, chunk in enumerate(shown["chunks"]):
        got = schunk.decompress_chunk(i)
        check(got == chunk, f"{what}: python-blosc2's chunk {i} differs from the mount's ({len(got)} vs "
                            f"{len(chunk)} bytes)")
    # c-blosc2's slicing assumes every chunk but the last is chunksize long (and divides
    # by chunksize: SIGFPE at 0), so frames with a short chunk elsewhere or variable
    # chunks are read chunk by chunk, as c-blosc2's own decompress_chunk does.
    sizes = [len(c) for c in shown["chunks"]]
    regular = schunk.chunksize > 0 and all(n == schunk.chunksize for n in sizes[:-1])
    if not schunk.nbytes:
        data = b""
    elif regular:
        data = schunk[:]
    else:
        data = b"".join(schunk.decompress_chunk(i) for i in range(schunk.nchunks))
    check(bytes(data) == shown["data"], f"{what}: python-blosc2's data differs from the mount's")
    check_equal(sorted(schunk.vlmeta), sorted(shown["vlmeta"]), f"{what}: vlmetalayer names in python-blosc2")
    for name, value in shown["vlmeta"].items():
        check_equal(raw_vlmeta(schunk, name), value, f"{what}: vlmeta {name!r} in python-blosc2")
    check_equal(sorted(schunk.meta.keys()), sorted(shown["meta"]), f"{what}: metalayer names in python-blosc2")
    for name, value in shown["meta"].items():
        check_equal(blosc2_ext.meta__getitem__(schunk, name), value, f"{what}: metalayer {name!r} in python-blosc2")
    if isinstance(opened, blosc2.NDArray):
        check("npy" in shown, f"{what}: python-blosc2 opens an N-d array, the mount showed no array.npy")
        want = opened[:]
        got = np.load(io.BytesIO(shown["npy"]), allow_pickle=False)
        check_equal(got.shape, want.shape, f"{what}: array shape")
        check(got.tobytes() == want.tobytes(), f"{what}: python-blosc2's array differs from array.npy")
