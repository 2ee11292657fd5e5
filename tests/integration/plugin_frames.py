"""Writes b2nd frames in every codec and filter python-blosc2 4.14 writes beyond the
stream codecs, one group per process, and beside each NAME.b2nd the reference
reading NAME.expect.npz (`array`: blosc2.open(path)[...], `chunkN`:
schunk.decompress_chunk(N)) made in the same process, with the plugin loaded.

    python plugin_frames.py GROUP OUTDIR

Groups: builtin (zfp, ndlz, ndcell, ndmean, int_trunc: inside c-blosc2), schunk
(their chunks moved into plain super-chunks, with no "b2nd" metalayer), j2k, j2k-raw,
j2k-float, htj2k, htj2k-grok, htj2k-float, openzl (PyPI plugins that write under
python-blosc2 4.x), and grok, openhtj2k: the frames committed in
tests/data/plugin-codecs (their plugins only read under 4.x), read again. A plugin's
backend and float mode are settings of the whole process, hence one process per
group. Prints one JSON line per frame:
  name, path, expect (the .npz, absent when python-blosc2 reads no chunk), codec,
  filters (the frame's filters by name), tolerance (the largest difference in a
  sample a lossy decoder other than the writer's may show), readable (python-blosc2
  decompresses every chunk), b2nd (the frame has a "b2nd" metalayer), nchunks,
  coded_chunks (chunks the codec and filters must undo: not copied verbatim, not
  special; only frames named *-stored may have none), and for a committed frame
  `committed`, its .expect.npz in the repository."""

import ctypes
import glob
import json
import os
import sys

import blosc2
import numpy as np

C, F, S = blosc2.Codec, blosc2.Filter, blosc2.SplitMode
HERE = os.path.dirname(os.path.abspath(__file__))
COMMITTED = os.path.join(HERE, "..", "data", "plugin-codecs")
rng = np.random.default_rng(20261125)


def signal(shape, dtype, noise=0.01):
    n = int(np.prod(shape))
    x = np.sin(np.arange(n) / 37.0) * 100 + rng.normal(0, noise, n)
    return x.astype(dtype).reshape(shape)


def rounded(shape, dtype):
    """Whole numbers: the codecs after NDCELL find repeats in their bytes."""
    return np.round(signal(shape, "f8")).astype(dtype)


def image(shape, dtype=np.uint8, modulo=256):
    rows, cols = shape[0], shape[1]
    base = np.add.outer(np.arange(rows) * 3, np.arange(cols) * 5) % modulo
    noise = rng.integers(0, 4, (rows, cols))
    grey = ((base + noise) % modulo).astype(dtype)
    if len(shape) == 3:
        return np.stack([np.roll(grey, k * 7, axis=1) for k in range(shape[2])], axis=-1)
    return grey


def mosaic(shape):
    """Bytes in three bands: flat 8x8 squares, one tile repeated, noise. So NDLZ writes
    constant cells, matches of earlier cells and literals (noise alone would leave every
    chunk stored raw)."""
    rows, cols = np.indices(shape)
    tile = rng.integers(0, 256, (8, 8))
    noise = rng.integers(0, 256, shape)
    band = cols * 3 // shape[1]
    return np.choose(band, [(rows // 8 * 17 + cols // 8 * 5) % 256, tile[rows % 8, cols % 8], noise]).astype(np.uint8)


def plugin_cparams(module, **extra):
    return dict(codec=module.CODEC_ID, filters=[], splitmode=S.NEVER_SPLIT, **extra)


def zfp_cases():
    """Codec meta per docs/plugin-codecs.md section 3: ZFP_ACC's is a signed power of ten
    passed as its two's-complement byte (253: 1e-3), ZFP_PREC's adds to a per-ndim base,
    ZFP_RATE's is a percentage of the type's bits (at most 100). Blocks do not divide
    the chunks, nor chunks the shape. Without `filters`, python-blosc2's default
    (SHUFFLE) stays on and zfp codes shuffled bytes: the reader unshuffles after zfp."""
    return {
        "zfp-acc-f4-2d": (signal((50, 70), "f4"), (25, 35), (8, 12), dict(codec=C.ZFP_ACC, codec_meta=253, filters=[])),
        "zfp-acc-f8-3d-shuffle": (signal((20, 18, 22), "f8"), (10, 9, 11), (5, 4, 6),
                                  dict(codec=C.ZFP_ACC, codec_meta=254)),
        "zfp-acc-f8-1d-tol1": (signal((3000,), "f8"), (1100,), (300,), dict(codec=C.ZFP_ACC, codec_meta=0, filters=[])),
        "zfp-acc-f4-4d-tol0.1": (signal((6, 7, 9, 10), "f4"), (6, 7, 9, 10), (4, 5, 6, 7),
                                 dict(codec=C.ZFP_ACC, codec_meta=255, filters=[])),
        # Integers of 4 or 8 bytes go through zfp as floats (lossy on their bit patterns).
        "zfp-acc-i4-1d": (signal((1000,), "i4"), (500,), (100,), dict(codec=C.ZFP_ACC, codec_meta=253, filters=[])),
        # ALWAYS_SPLIT hands zfp byte streams, not blocks: every stream is stored raw.
        "zfp-acc-f4-split-stored": (signal((1000,), "f4"), (500,), (100,),
                                 dict(codec=C.ZFP_ACC, codec_meta=253, filters=[F.SHUFFLE], splitmode=S.ALWAYS_SPLIT)),
        "zfp-prec-f4-1d": (signal((1000,), "f4"), (300,), (64,), dict(codec=C.ZFP_PREC, codec_meta=12, filters=[])),
        "zfp-prec-f8-4d": (signal((8, 9, 10, 11), "f8"), (4, 5, 6, 7), (4, 4, 4, 4),
                           dict(codec=C.ZFP_PREC, codec_meta=20, filters=[])),
        "zfp-prec-f4-2d-shuffle": (signal((40, 36), "f4"), (20, 36), (10, 12), dict(codec=C.ZFP_PREC, codec_meta=10)),
        # Precision 200 is capped at 64 bits: nothing smaller, so every stream is stored raw.
        "zfp-prec-f8-3d-cap64-stored": (signal((12, 10, 8), "f8"), (6, 10, 8), (6, 5, 4),
                                 dict(codec=C.ZFP_PREC, codec_meta=200, filters=[])),
        "zfp-rate-f4-2d": (signal((64, 48), "f4"), (32, 48), (16, 16), dict(codec=C.ZFP_RATE, codec_meta=50, filters=[])),
        "zfp-rate-f8-3d": (signal((16, 16, 16), "f8"), (8, 16, 16), (8, 8, 8),
                           dict(codec=C.ZFP_RATE, codec_meta=30, filters=[])),
        # Rate 100: as many bits as the input, so every stream is stored raw.
        "zfp-rate-f8-1d-100-stored": (signal((1000,), "f8"), (500,), (100,), dict(codec=C.ZFP_RATE, codec_meta=100, filters=[])),
        "zfp-rate-f4-4d-shuffle": (signal((8, 8, 6, 10), "f4"), (4, 8, 6, 10), (4, 4, 6, 5),
                                   dict(codec=C.ZFP_RATE, codec_meta=40)),
        "zfp-rate-f4-2d-bitshuffle": (signal((30, 50), "f4"), (15, 50), (15, 25),
                                      dict(codec=C.ZFP_RATE, codec_meta=50, filters=[F.BITSHUFFLE])),
    }


def ndlz_cases():
    """NDLZ codes 2-d blocks of bytes in 4x4 or 8x8 cells (codec meta); wider types only
    split into byte streams (SHUFFLE + ALWAYS_SPLIT)."""
    return {
        "ndlz4-u1": (image((100, 90)), (50, 45), (20, 30), dict(codec=C.NDLZ, codec_meta=4, filters=[])),
        "ndlz4-u1-mosaic": (mosaic((64, 96)), (32, 96), (32, 48), dict(codec=C.NDLZ, codec_meta=4, filters=[])),
        "ndlz8-u1": (mosaic((100, 90)), (64, 64), (32, 32), dict(codec=C.NDLZ, codec_meta=8, filters=[])),
        "ndlz8-u1-edge-cells": (mosaic((60, 50)), (30, 50), (20, 30), dict(codec=C.NDLZ, codec_meta=8, filters=[])),
        "ndlz4-f4-split": (signal((64, 64), "f4"), (32, 32), (16, 16),
                           dict(codec=C.NDLZ, codec_meta=4, filters=[F.SHUFFLE], splitmode=S.ALWAYS_SPLIT)),
        "ndlz8-u2-split": (image((64, 64), np.uint16, 4096), (32, 64), (16, 32),
                           dict(codec=C.NDLZ, codec_meta=8, filters=[F.SHUFFLE], splitmode=S.ALWAYS_SPLIT)),
    }


def filter_cases():
    """NDCELL (lossless) and NDMEAN (lossy) reorder each block into cells of filters_meta
    per side, before zstd or lz4; INT_TRUNC keeps the filters_meta high bits (python-blosc2
    4.14.1 accepts no negative filters_meta for it)."""
    return {
        "ndcell-f4-zstd": (rounded((40, 30), "f4"), (20, 30), (10, 15), dict(codec=C.ZSTD, filters=[F.NDCELL], filters_meta=[4])),
        "ndcell-f8-1d-lz4": (rounded((1000,), "f8"), (400,), (150,), dict(codec=C.LZ4, filters=[F.NDCELL], filters_meta=[7])),
        "ndcell-i2-3d-lz4": (signal((12, 10, 14), "i2"), (6, 10, 7), (6, 5, 7),
                             dict(codec=C.LZ4, filters=[F.NDCELL, F.SHUFFLE], filters_meta=[3, 0])),
        "ndcell-i4-4d-zstd": (signal((6, 8, 10, 9), "i4"), (6, 8, 10, 9), (3, 4, 5, 9),
                              dict(codec=C.ZSTD, filters=[F.NDCELL], filters_meta=[2])),
        "ndmean-f8-zstd": (signal((40, 30), "f8"), (20, 30), (10, 15), dict(codec=C.ZSTD, filters=[F.NDMEAN], filters_meta=[4])),
        "ndmean-i4-zstd": (signal((32, 32), "i4"), (16, 32), (16, 16), dict(codec=C.ZSTD, filters=[F.NDMEAN], filters_meta=[5])),
        "ndmean-f4-3d-lz4": (signal((10, 12, 14), "f4"), (10, 12, 14), (5, 6, 7),
                             dict(codec=C.LZ4, filters=[F.NDMEAN, F.SHUFFLE], filters_meta=[3, 0])),
        "ndmean-f4-1d-zstd": (signal((1000,), "f4"), (500,), (90,), dict(codec=C.ZSTD, filters=[F.NDMEAN], filters_meta=[16])),
        # A 2x40 block with cells of 4: c-blosc2's NDMEAN backward places the cells with
        # the clipped first side (2) as the multiplier of every dimension and fails its
        # own final check, so python-blosc2 cannot read what it wrote. The mount: EIO.
        "ndmean-f4-unreadable": (signal((4, 80), "f4"), (2, 80), (2, 40),
                                 dict(codec=C.ZSTD, filters=[F.NDMEAN], filters_meta=[4])),
        "int-trunc-i8-zstd": (signal((1000,), "i8") * 12345, (250,), (50,),
                              dict(codec=C.ZSTD, filters=[F.INT_TRUNC], filters_meta=[20])),
        "int-trunc-u2-lz4": (image((50, 40), np.uint16, 60000), (25, 40), (25, 20),
                             dict(codec=C.LZ4, filters=[F.INT_TRUNC, F.SHUFFLE], filters_meta=[9, 0])),
        "int-trunc-i4-zstd": (signal((2000,), "i4") * 1000, (1000,), (250,),
                              dict(codec=C.ZSTD, filters=[F.INT_TRUNC], filters_meta=[30])),
    }


def j2k_cases(module):
    grey, rgb, u16 = image((64, 48)), image((64, 48, 3)), image((60, 40), np.uint16, 4096)
    return {
        "j2k-u8-grey": (grey, (64, 48), (64, 48), plugin_cparams(module)),
        # Chunks and blocks that do not divide the shape: edge blocks are padded.
        "j2k-u8-rgb": (image((70, 50, 3)), (40, 50, 3), (40, 50, 3), plugin_cparams(module)),
        "j2k-u16": (u16, (30, 40), (30, 40), plugin_cparams(module)),
        "j2k-u8-grey-lossy": (grey, (64, 48), (32, 48), plugin_cparams(module, codec_meta=50)),
        "j2k-u8-rgb-2blocks": (rgb, (64, 48, 3), (32, 48, 3), plugin_cparams(module)),
    }


def htj2k_cases(module, lossy):
    cases = {
        "u8-grey": (image((64, 48)), (64, 48), (64, 48), plugin_cparams(module)),
        "u8-rgb": (image((64, 48, 3)), (64, 48, 3), (32, 48, 3), plugin_cparams(module)),
        "u16": (image((60, 40), np.uint16, 4096), (30, 40), (30, 40), plugin_cparams(module)),
    }
    if lossy:
        cases["u8-grey-lossy"] = (image((64, 48)), (64, 48), (64, 48), plugin_cparams(module, codec_meta=40))
    return cases


def float_cases(module, prefix):
    return {f"{prefix}-f4-float16": (signal((64, 48), "f4"), (64, 48), (32, 48), plugin_cparams(module))}


def filter_names(schunk):
    return [f.name.lower() for f in schunk.cparams.filters if f != F.NOFILTER]


def chunk_is_stored_raw(chunk):
    """c-blosc2 copied the chunk verbatim (flags bit 1: memcpyed) or wrote a special
    (zeros, NaNs, uninitialized) chunk: no codec or filter runs on reading it."""
    return bool(chunk[2] & 0x02) or bool(chunk[31] & 0x70)


def reference_reading(path, outdir, name):
    """Saves python-blosc2's reading of the frame at path as OUTDIR/NAME.expect.npz;
    returns the entry fields that depend on it."""
    reread = blosc2.open(path, mode="r")
    schunk = reread.schunk if isinstance(reread, blosc2.NDArray) else reread
    expect, readable = {}, True
    for i in range(schunk.nchunks):
        try:
            expect[f"chunk{i}"] = np.frombuffer(schunk.decompress_chunk(i), dtype=np.uint8)
        except Exception:
            readable = False
    if isinstance(reread, blosc2.NDArray) and readable:
        expect["array"] = reread[...]
    coded = sum(1 for i in range(schunk.nchunks) if not chunk_is_stored_raw(schunk.get_chunk(i)))
    fields = {"readable": readable, "b2nd": "b2nd" in schunk.meta, "filters": filter_names(schunk),
              "nchunks": schunk.nchunks, "coded_chunks": coded}
    if expect:
        fields["expect"] = os.path.join(outdir, name + ".expect.npz")
        np.savez(fields["expect"], **expect)
    return fields


def emit(name, path, codec, tolerance, fields, **extra):
    print(json.dumps({"name": name, "path": path, "codec": codec, "tolerance": tolerance, **fields, **extra}),
          flush=True)


def write(outdir, name, array, chunks, blocks, cparams, codec, tolerance=0, contiguous=True):
    """A b2nd frame; contiguous=False: a sparse frame (a NAME.b2nd directory)."""
    path = os.path.join(outdir, name + ".b2nd")
    blosc2.asarray(array, urlpath=path, mode="w", chunks=chunks, blocks=blocks, cparams=blosc2.CParams(**cparams),
                   contiguous=contiguous)
    emit(name, path, codec, tolerance, reference_reading(path, outdir, name), sparse=not contiguous)


# Every OpenZL profile blosc2-openzl names (codec meta: bit 0 LZ4 else ZSTD, bit 1
# shuffle, bit 2 bytedelta, bit 3 split streams, bit 4 checksum), each once, over
# 1-d to 4-d arrays of float32, float64, int16 and uint8, contiguous and sparse,
# some with c-blosc2's own shuffle or bytedelta filter before the plugin.
OPENZL_PROFILES = [0, 1, 2, 3, 6, 7, 14, 15]
OPENZL_SHAPES = [((20000,), (6000,), (1500,)), ((200, 300), (64, 128), (16, 64)),
                 ((20, 30, 40), (8, 16, 40), (4, 8, 20)), ((6, 10, 12, 14), (3, 5, 12, 14), (2, 5, 6, 7))]
OPENZL_DTYPES = ["f4", "f8", "i2", "u1"]


def openzl_values(shape, dtype):
    if dtype == "u1":  # few distinct values, so that every chunk compresses
        return (np.round(signal(shape, "f8") / 8) + 120).astype(np.uint8)
    if dtype == "i2":
        return np.round(signal(shape, "f8") * 50).astype(np.int16)
    return signal(shape, dtype)


def openzl_cases():
    cases = {}
    for i, meta in enumerate(OPENZL_PROFILES + [p + 16 for p in OPENZL_PROFILES]):
        shape, chunks, blocks = OPENZL_SHAPES[i % 4]
        dtype = OPENZL_DTYPES[(i // 4) % 4]
        if dtype == "u1" and meta & 8:  # the split profiles code nothing of one-byte items (stored raw)
            dtype = "f4"
        if dtype == "u1":  # a block of a few hundred bytes does not pay OpenZL's frame header
            blocks = chunks
        filters = [F.SHUFFLE] if i % 5 == 1 else [F.BYTEDELTA] if i % 5 == 3 and dtype != "u1" else []
        sparse = i % 3 == 2
        name = f"openzl-p{meta}-{dtype}-{len(shape)}d" + ("-sparse" if sparse else "") + \
            "".join("-" + f.name.lower() for f in filters)
        cparams = dict(codec=38, codec_meta=meta, filters=filters, splitmode=S.NEVER_SPLIT)
        cases[name] = (openzl_values(shape, dtype), chunks, blocks, cparams, sparse)
    return cases


def openzl_store(outdir):
    """A .b2z DictStore whose leaf "/grid" is an OpenZL array (beside a zstd one)."""
    path = os.path.join(outdir, "openzl-store.b2z")
    grid = openzl_values((120, 90), "f4")
    with blosc2.DictStore(path, mode="w") as store:
        store["/grid"] = blosc2.asarray(grid, chunks=(60, 90), blocks=(20, 90),
                                        cparams=blosc2.CParams(codec=38, codec_meta=6, filters=[],
                                                               splitmode=S.NEVER_SPLIT))
        store["/plain"] = blosc2.asarray(np.arange(100, dtype=np.int32))
    reread = blosc2.DictStore(path, mode="r")
    leaf = reread["/grid"]
    expect = os.path.join(outdir, "openzl-store.expect.npz")
    np.savez(expect, array=leaf[...],
             **{f"chunk{i}": np.frombuffer(leaf.schunk.decompress_chunk(i), np.uint8) for i in range(leaf.schunk.nchunks)})
    if leaf.schunk.cparams.codec != C.OPENZL:
        sys.exit(f"plugin_frames.py: the store leaf is in codec {leaf.schunk.cparams.codec}, not OpenZL")
    emit("openzl-store", path, "openzl", 0, {"readable": True, "b2nd": True, "filters": [], "store": True,
                                              "leaf": "grid", "nchunks": leaf.schunk.nchunks,
                                              "coded_chunks": leaf.schunk.nchunks, "expect": expect})


def transplant(outdir, name, source_path, codec):
    """A plain super-chunk (no "b2nd" metalayer) holding, verbatim, the chunks c-blosc2
    wrote into the b2nd frame at source_path: python-blosc2 writes no plugin codec or
    filter without the metalayer, but c-blosc2 stores any chunk it is handed."""
    opened = blosc2.open(source_path, mode="r")  # kept: its schunk lives as long as it does
    source = opened.schunk
    path = os.path.join(outdir, name + ".b2frame")
    cparams = source.cparams
    target = blosc2.SChunk(chunksize=source.chunksize, urlpath=path, mode="w",
                           cparams=blosc2.CParams(codec=cparams.codec, codec_meta=cparams.codec_meta,
                                                  typesize=source.typesize, filters=cparams.filters,
                                                  filters_meta=cparams.filters_meta, splitmode=cparams.splitmode))
    for i in range(source.nchunks):
        target.append_chunk(source.get_chunk(i))
    del target
    emit(name, path, codec, 0, reference_reading(path, outdir, name))


def committed(outdir, prefix, codec):
    """The frames of tests/data/plugin-codecs named PREFIX-*, read again here."""
    for path in sorted(glob.glob(os.path.join(COMMITTED, prefix + "-*.b2nd"))):
        name = os.path.basename(path)[:-len(".b2nd")]
        tolerance = 2 if (codec == "openhtj2k" and "lossy" in name) else 0
        emit(name, os.path.abspath(path), codec, tolerance, reference_reading(path, outdir, name),
             committed=os.path.abspath(path[:-len(".b2nd")] + ".expect.npz"))


CODEC_NAMES = {C.ZFP_ACC: "zfp_acc", C.ZFP_PREC: "zfp_prec", C.ZFP_RATE: "zfp_rate", C.NDLZ: "ndlz",
               C.ZSTD: "zstd", C.LZ4: "lz4"}


def main(group, outdir):
    os.makedirs(outdir, exist_ok=True)
    if group == "builtin":
        for name, (array, chunks, blocks, cparams) in {**zfp_cases(), **ndlz_cases(), **filter_cases()}.items():
            write(outdir, name, array, chunks, blocks, cparams, CODEC_NAMES[cparams["codec"]])
    elif group == "schunk":
        sources = {"zfp-acc": "zfp-acc-f4-2d", "ndlz4": "ndlz4-u1", "ndcell": "ndcell-f4-zstd"}
        cases = {**zfp_cases(), **ndlz_cases(), **filter_cases()}
        for stem, source in sources.items():
            array, chunks, blocks, cparams = cases[source]
            source_path = os.path.join(outdir, "b2nd-source-" + source + ".b2nd")
            blosc2.asarray(array, urlpath=source_path, mode="w", chunks=chunks, blocks=blocks,
                           cparams=blosc2.CParams(**cparams))
            transplant(outdir, "schunk-" + stem, source_path, CODEC_NAMES[cparams["codec"]])
    elif group.startswith("j2k"):
        import blosc2_j2k as j2k
        j2k.register_codec()
        j2k.configure(backend="grok", float_mode="uint16" if group == "j2k-float" else None)
        if group == "j2k-raw":  # raw codestreams instead of JP2 files
            j2k.set_params_defaults(cod_format=j2k.GrkFileFmt.GRK_FMT_J2K)
            cases = {name + "-raw": case for name, case in j2k_cases(j2k).items() if "rgb" not in name}
        elif group == "j2k-float":
            cases = float_cases(j2k, "j2k")
        else:
            cases = j2k_cases(j2k)
        for name, (array, chunks, blocks, cparams) in cases.items():
            write(outdir, name, array, chunks, blocks, cparams, "j2k")
        if group == "j2k":
            # J2K needs no block shape to decode (the codestream has its own): read as python-blosc2 reads it.
            transplant(outdir, "schunk-j2k", os.path.join(outdir, "j2k-u8-rgb-2blocks.b2nd"), "j2k")
    elif group.startswith("htj2k"):
        import blosc2_htj2k as htj2k
        htj2k.register_codec()
        backend = "grok" if group == "htj2k-grok" else "openhtj2k"
        htj2k.configure(backend=backend, float_mode="uint16" if group == "htj2k-float" else None)
        if group == "htj2k-float":
            cases = float_cases(htj2k, "htj2k")
        else:
            cases = {f"htj2k-{backend}-{name}": case for name, case in htj2k_cases(htj2k, backend == "openhtj2k").items()}
        for name, (array, chunks, blocks, cparams) in cases.items():
            # OpenJPEG and OpenHTJ2K round the irreversible transform differently.
            tolerance = 2 if "lossy" in name else 0
            write(outdir, name, array, chunks, blocks, cparams, "htj2k", tolerance)
    elif group == "openzl":
        for name, (array, chunks, blocks, cparams, sparse) in openzl_cases().items():
            write(outdir, name, array, chunks, blocks, cparams, "openzl", contiguous=not sparse)
        openzl_store(outdir)
    elif group in ("grok", "openhtj2k"):
        # Loaded into this process, the plugin is what c-blosc2's dlopen by name finds
        # (otherwise it asks the first `python` on PATH where the plugin is).
        plugin = __import__("blosc2_" + group)
        ctypes.CDLL(plugin.get_libpath())
        committed(outdir, group, group)
    else:
        sys.exit(f"plugin_frames.py: unknown group {group}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
