"""Random arrays as python-blosc2 writes them, read and edited through a mount,
each step checked against python-blosc2 itself. A seed draws a dtype, a shape
(0-d to 4-d, empty dimensions included), chunk and block shapes, a codec and
level, a filter pipeline (shuffle, bitshuffle, delta, trunc_prec, bytedelta),
a split mode, a dictionary, a contiguous or sparse frame, and contents (random,
constant, mostly zeros, left unwritten). Then:

- array.npy (with and without mmap_mode) equals blosc2.open(path)[...];
- the Zarr v3 and v2 views (number types) equal it, whole and in slices;
- every chunk decodes as c-blosc2 decompresses it (blosc2.decompress of raw/N.chunk);
- a region written through array.npy (open_memmap r+) or through zarr-python
  leaves the chunks it does not touch as they were, and reads back, in the mount
  and in python-blosc2, as what the mount read before with the region replaced.

Where python-blosc2 reads other values than it wrote (docs/codecs.md), the mount
must read the values written, or what c-blosc2 decompresses the chunks to.

CI runs fixed seeds (CI_SEEDS, among them each of python-blosc2's misreadings
docs/codecs.md lists); scripts/random-arrays.sh runs any (BLOSC2FS_RANDOM_SEEDS)."""

import os
import random
import shutil
import signal
import sys
import time
import types

import blosc2
import numpy as np
import zarr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness, check, check_equal, parse_seeds, read_file  # noqa: E402
from writes import check_untouched, chunk_numbers  # noqa: E402

NUMBERS = ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16",
           ">i2", ">u4", ">f8", ">c8"]
OTHERS = ["S5", "<U3", "M8[s]", "m8[ms]", "V3"]
CODECS = [blosc2.Codec.BLOSCLZ, blosc2.Codec.LZ4, blosc2.Codec.LZ4HC, blosc2.Codec.ZLIB, blosc2.Codec.ZSTD]
FILTERS = [blosc2.Filter.SHUFFLE, blosc2.Filter.BITSHUFFLE, blosc2.Filter.DELTA, blosc2.Filter.TRUNC_PREC,
           blosc2.Filter.BYTEDELTA]
MAX_ITEMS = 200_000
# The seeds of docs/codecs.md's table: 14 (two DELTA filters), 75 and 80 (python-blosc2 slicing an edge
# chunk; 652 and 1733: one the mount's write makes, as python-blosc2's own same write), 421 and
# 328 (python-blosc2 cannot read it; 328: nor can c-blosc2 decompress a chunk, DELTA with a
# dictionary), 40, 65 and 301 (chunks that hold other values); 2062: trunc_prec then DELTA.
CI_SEEDS = "1-30,40,65,75,80,301,328,421,652,1733,2062"
CHILD_PATIENCE = 300  # seconds python-blosc2 may take to read one array


def draw_shape(r):
    ndim = r.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
    while True:
        shape = tuple(r.choice([0, 1, 2, 3, 5, 7, 10, 16, 31, 64, 100, 257]) for _ in range(ndim))
        if int(np.prod(shape, dtype=np.int64)) <= MAX_ITEMS and (not shape or r.random() < 0.1 or 0 not in shape):
            return shape


def draw_cparams(r, dtype):
    codec = r.choice(CODECS)
    filters, meta = [], []
    for _ in range(r.randint(0, 3)):
        f = r.choice(FILTERS)
        if f == blosc2.Filter.TRUNC_PREC:
            if dtype.kind != "f" or dtype.itemsize < 4:
                continue
            m = r.randint(1, 23 if dtype.itemsize == 4 else 52)
        else:
            m = 0
        filters.append(f)
        meta.append(m)
    cparams = {"codec": codec, "clevel": r.randint(0, 9), "filters": filters or [blosc2.Filter.NOFILTER],
               "filters_meta": meta or [0], "splitmode": r.choice(list(blosc2.SplitMode))}
    if codec in (blosc2.Codec.ZSTD, blosc2.Codec.LZ4, blosc2.Codec.LZ4HC) and r.random() < 0.3:
        cparams["use_dict"] = True
    return cparams


def draw_values(r, rng, shape, dtype):
    n = int(np.prod(shape, dtype=np.int64))
    kind = r.choice(["random", "random", "constant", "sparse"])
    raw = rng.integers(0, 256, size=n * dtype.itemsize, dtype=np.uint8)
    a = raw.view(dtype).reshape(shape) if n else np.zeros(shape, dtype)
    if dtype.kind == "b":
        a = (raw.reshape(n, dtype.itemsize)[:, 0] & 1).astype(bool).reshape(shape)
    elif dtype.kind == "U":
        a = rng.integers(0x20, 0x3000, size=(n, dtype.itemsize // 4)).astype("<u4").view("<U1")
        a = np.array(["".join(row) for row in a.reshape(n, -1)], dtype=dtype).reshape(shape)
    elif dtype.kind in "fc":
        a = np.nan_to_num(a.copy(), nan=1.5, posinf=2.5, neginf=-2.5)
    a = np.ascontiguousarray(np.array(a, dtype=dtype))
    if kind == "constant" and n:
        a[...] = a.flat[0]
    elif kind == "sparse" and n:
        keep = rng.random(shape) < 0.01
        a = np.ascontiguousarray(np.where(keep, a, np.zeros((), dtype)).astype(dtype))
    return a


def make_array(r, rng, path, seed):
    dtype = np.dtype(r.choice(NUMBERS + OTHERS))
    shape = draw_shape(r)
    chunks = tuple(r.randint(1, max(1, s)) for s in shape)
    blocks = tuple(r.randint(1, c) for c in chunks)
    cparams = draw_cparams(r, dtype)
    contiguous = r.random() < 0.7
    values = draw_values(r, rng, shape, dtype)
    how = r.choice(["asarray", "asarray", "empty-then-part"])
    desc = (f"seed {seed}: {dtype.str} {shape} chunks {chunks} blocks {blocks} {cparams['codec'].name} "
            f"clevel {cparams['clevel']} filters {[f.name for f in cparams['filters']]} {cparams['filters_meta']} "
            f"{cparams['splitmode'].name}{' dict' if cparams.get('use_dict') else ''} "
            f"{'contiguous' if contiguous else 'sparse'} {how}")
    kwargs = dict(urlpath=path, mode="w", chunks=chunks or None, blocks=blocks or None, cparams=cparams,
                  contiguous=contiguous)
    if how == "asarray" or not shape or 0 in shape:
        blosc2.asarray(values, **kwargs)
        written = values
    else:
        # Chunks never written stay special (all zeros, or never stored).
        zeros = r.random() < 0.5
        arr = blosc2.zeros(shape, dtype=dtype, **kwargs) if zeros else blosc2.empty(shape, dtype=dtype, **kwargs)
        region = tuple(slice(0, max(1, s // 2)) for s in shape)
        arr[region] = np.ascontiguousarray(values[region])  # python-blosc2 takes no strided source
        del arr
        written = np.zeros(shape, dtype) if zeros else None
        if written is not None:
            written[region] = values[region]
    lossy = blosc2.Filter.TRUNC_PREC in cparams["filters"]
    return types.SimpleNamespace(desc=desc, dtype=dtype, shape=shape, chunks=chunks, written=written, lossy=lossy,
                                 leading_truncs=leading_truncs(cparams))


def leading_truncs(cparams):
    """The mantissa bits each trunc_prec at the head of the pipeline keeps, in order."""
    bits = []
    for f, m in zip(cparams["filters"], cparams["filters_meta"]):
        if f != blosc2.Filter.TRUNC_PREC:
            break
        bits.append(m)
    return bits


def _in_child(work, out):
    try:
        blosc2.set_nthreads(1)  # c-blosc2 decodes two DELTA filters right with one thread only
        result = work()
        with open(out + ".part", "wb") as f:
            np.save(f, result, allow_pickle=False)
        os.replace(out + ".part", out)
    except BaseException as e:
        with open(out + ".error", "w") as f:
            f.write(f"{type(e).__name__}: {e}"[:300])
    finally:
        os._exit(0)


def in_child(work, out):
    """work() run in a forked child (python-blosc2 may crash on what it wrote), its array
    result through a file; (result, None) or (None, why)."""
    for stale in (out, out + ".error"):
        if os.path.exists(stale):
            os.unlink(stale)
    pid = os.fork()
    if pid == 0:
        _in_child(work, out)
    deadline = time.monotonic() + CHILD_PATIENCE
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None, f"python-blosc2 did not finish in {CHILD_PATIENCE} s"
        time.sleep(0.01)
    if not os.path.exists(out):
        if os.path.exists(out + ".error"):
            with open(out + ".error") as f:
                what = f.read()
        else:
            what = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"wait status {status}"
        return None, f"python-blosc2 cannot read it ({what})"
    return np.load(out, allow_pickle=False), None


def python_blosc2_reads(path, edit=None):
    """python-blosc2's reading of path (after making `edit`, a (region, values) pair, if
    given), or None and why, with one thread."""
    def work():
        if edit is not None:
            arr = blosc2.open(path, mode="a")
            arr[edit[0]] = edit[1]
            del arr
        arr = blosc2.open(path, mode="r", dparams={"nthreads": 1})
        return arr[()] if arr.ndim == 0 else arr[...]
    return in_child(work, path + ".reference.npy")


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype.itemsize != want.dtype.itemsize:
        return False
    return got.astype(want.dtype).tobytes() == want.tobytes()


def random_region(r, shape):
    region = []
    for s in shape:
        start = r.randint(0, s - 1)
        region.append(slice(start, r.randint(start + 1, s)))
    return tuple(region)


def inspect(h, r, path, desc, dtype, shape):
    """One read-only mount: array.npy (both ways NumPy reads it), which the Zarr views, whole
    and in slices, must equal; each chunk's stored bytes (raw/N.chunk, in order), and each
    chunk's chunks/N compared with c-blosc2 decompressing raw/N.chunk (blosc2.decompress, one
    thread): those that differ fail, those c-blosc2 cannot decompress are said."""
    mnt = h.mount(path, ["-o", "ro"])
    try:
        npy = os.path.join(mnt, "array.npy")
        got = np.load(npy, allow_pickle=False)
        mapped = np.load(npy, mmap_mode="r", allow_pickle=False)
        check(mapped.tobytes() == got.tobytes(), f"{desc}: array.npy reads differently with mmap_mode='r'")
        del mapped
        has_view = os.path.exists(os.path.join(mnt, "zarr.json"))
        check_equal(has_view, dtype.kind in "biufc", f"{desc}: a Zarr view")
        if has_view:
            for where, fmt in ((mnt, 3), (os.path.join(mnt, "zarr2"), 2)):
                z = zarr.open_array(where, mode="r", zarr_format=fmt)
                check(same(z[...], got), f"{desc}: Zarr v{fmt} [...] differs from array.npy")
                if shape and 0 not in shape:
                    for _ in range(3):
                        region = random_region(r, shape)
                        check(same(z[region], got[region]), f"{desc}: Zarr v{fmt} {region} differs from array.npy")
        names = sorted(os.listdir(os.path.join(mnt, "chunks")))  # chunk n is names[n]
        stored = [read_file(os.path.join(mnt, "raw", name + ".chunk")) for name in names]

        def work():
            verdicts = []
            for name, raw in zip(names, stored):
                try:
                    theirs = blosc2.decompress(raw)
                except (RuntimeError, ValueError):
                    verdicts.append(2)
                    continue
                verdicts.append(0 if read_file(os.path.join(mnt, "chunks", name)) == theirs else 1)
            return np.array(verdicts, dtype=np.int8)
        verdicts, why = in_child(work, path + ".chunks.npy")
    finally:
        h.unmount(mnt)
    check(verdicts is not None, f"{desc}: comparing chunks with c-blosc2's decompression: {why}")
    undecodable = [n for n, v in enumerate(verdicts) if v == 2]
    if undecodable:
        print(f"  {desc}: c-blosc2 cannot decompress chunks {undecodable[:5]}", flush=True)
    disagreeing = [n for n, v in enumerate(verdicts) if v == 1]
    check(not disagreeing, f"{desc}: chunks {disagreeing[:5]} decode otherwise than c-blosc2 decompresses them")
    return got, stored


def truncated(values, bits):
    """values through trunc_prec with `bits` mantissa bits kept (filters_meta >= 0)."""
    words = values.view(f"u{values.dtype.itemsize}")
    zeroed = (23 if values.dtype.itemsize == 4 else 52) - bits
    mask = np.array(~((1 << zeroed) - 1) & (2 ** (8 * values.dtype.itemsize) - 1), dtype=words.dtype)
    return (words & mask).view(values.dtype)


def judge(desc, got, reference, why, written):
    """The mount (whose chunks decode as c-blosc2 decompresses them) reads right when it reads
    as python-blosc2 reads, or the values written where python-blosc2 does not, or, where neither
    holds, what the chunks hold (c-blosc2's own bugs, docs/codecs.md). Returns whether
    python-blosc2 read right too."""
    if reference is not None and same(got, reference):
        if written is not None and not same(reference, written):
            print(f"  {desc}: python-blosc2 and the mount both read other values than were written", flush=True)
        return True
    if written is not None and same(got, written):
        print(f"  {desc}: the mount reads the values written; "
              f"{'python-blosc2 reads others' if reference is not None else why}", flush=True)
        return False
    print(f"  {desc}: the mount reads what c-blosc2 decompresses the chunks to; "
          f"{'python-blosc2 reads others' if reference is not None else why}"
          f"{'' if written is None else ', and neither are the values written'}", flush=True)
    return False


def check_write(h, r, rng, path, a, before, stored, python_blosc2_right):
    """One region written through the mount. Chunks the region does not touch keep their
    stored bytes; every chunk decodes as c-blosc2 decompresses it. Lossless, the mount and
    python-blosc2 (where it read right before: c-blosc2's decoding bugs stay) read what the
    mount read before with the region replaced. Through trunc_prec, the region reads the
    values written in every bit a leading trunc_prec keeps, and python-blosc2 reads
    what the mount reads (not its own edit: c-blosc2 stores raw, untruncated, a chunk whose
    blocks do not come out smaller, and python-blosc2's zlib fits fewer blocks than Debian's:
    docs/codecs.md)."""
    shape, dtype = a.shape, a.dtype
    if not shape or 0 in shape:
        return
    via = r.choice(["npy", "zarr"] if dtype.kind in "biufc" else ["npy"])
    region = random_region(r, shape)
    new = draw_values(r, rng, tuple(s.stop - s.start for s in region), dtype)
    desc = a.desc + f", then {region} written through {via}"
    twin = path + ".twin"  # the frame as it was, for python-blosc2 to make the same edit
    (shutil.copytree if os.path.isdir(path) else shutil.copyfile)(path, twin)
    mnt = h.mount(path)
    try:
        if via == "npy":
            m = np.lib.format.open_memmap(os.path.join(mnt, "array.npy"), mode="r+")
            m[region] = new
            m.flush()
            del m
        else:
            z = zarr.open_array(mnt, mode="r+")
            z[region] = new
    finally:
        h.unmount(mnt)
    got, after = inspect(h, r, path, desc, dtype, shape)
    check_untouched(stored, after, chunk_numbers(shape, a.chunks, region), desc)
    if a.lossy:
        if a.leading_truncs:  # elsewhere in the pipeline it truncates bytes other filters made
            # Every bit trunc_prec keeps reads as written. (The bits it drops are zero, or, with
            # DELTA after it, block 0's: c-blosc2 XORs with block 0 as given, not as truncated.)
            kept_new, kept_got = new, got[region]
            for bits in a.leading_truncs:
                kept_new, kept_got = truncated(kept_new, bits), truncated(kept_got, bits)
            ok = (got[region] == new) | (kept_got == kept_new)
            check(bool(np.all(ok)), f"{desc}: the region differs from the values written in bits trunc_prec keeps")
        expected = got
    else:
        expected = before.copy()
        expected[region] = new
        check(same(got, expected), f"{desc}: the mount reads other values")
    reference, why = python_blosc2_reads(path)
    if reference is not None and same(reference, expected):
        return
    if not python_blosc2_right:
        print(f"  {desc}: python-blosc2 misreads it as it misread the array before", flush=True)
        return
    check(reference is not None, f"{desc}: {why}")
    # A chunk the write made may be one python-blosc2 misreads (an edge chunk through its
    # slicing, while c-blosc2 decompresses it as the mount reads it): then python-blosc2 does
    # not read back its own same edit either.
    own, _ = python_blosc2_reads(twin, (region, new))
    check(not a.lossy and (own is None or not same(own, expected)),
          f"{desc}: python-blosc2 reads other values than the mount, though it reads its own same edit right")
    print(f"  {desc}: python-blosc2 misreads it, and its own same edit too", flush=True)


def random_array(h, seed):
    r = random.Random(seed)
    rng = np.random.default_rng(seed)
    path = os.path.join(h.new_dir("arrays"), "a.b2nd")
    try:
        a = make_array(r, rng, path, seed)
    except (ValueError, RuntimeError) as e:  # a combination python-blosc2 itself refuses
        print(f"  seed {seed}: python-blosc2 refused to write it ({e}); not ours to read", flush=True)
        return
    print(f"  {a.desc}", flush=True)
    got, stored = inspect(h, r, path, a.desc, a.dtype, a.shape)
    reference, why = python_blosc2_reads(path)
    python_blosc2_right = judge(a.desc, got, reference, why, None if a.lossy else a.written)
    check_write(h, r, rng, path, a, got, stored, python_blosc2_right)


def main():
    h = Harness(__doc__.splitlines()[0], watchdog_seconds=600)
    for seed in parse_seeds(os.environ.get("BLOSC2FS_RANDOM_SEEDS", CI_SEEDS)):
        h.test(f"random array seed {seed} (replay: scripts/random-arrays.sh {seed})", random_array, h, seed)
    h.finish()


if __name__ == "__main__":
    main()
