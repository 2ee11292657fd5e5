"""Writes b2nd frames in every codec and filter python-blosc2 4.14 writes beyond the
stream codecs, one group per process, and beside each NAME.b2nd the reference
reading NAME.expect.npz (`array`: blosc2.open(path)[...], `chunkN`:
schunk.decompress_chunk(N)) made in the same process, with the plugin loaded.

    python plugin_frames.py GROUP OUTDIR

Groups: builtin (zfp, ndlz, ndcell, ndmean, int_trunc: inside c-blosc2), j2k,
j2k-raw, j2k-float, htj2k, htj2k-grok, htj2k-float, openzl (PyPI plugins). A
plugin's backend and float mode are settings of the whole process, hence one
process per group. Prints one JSON line per frame: name, codec, and `tolerance`
(the largest difference a lossy decoder other than the writer's may show)."""

import json
import os
import sys

import blosc2
import numpy as np

C, F, S = blosc2.Codec, blosc2.Filter, blosc2.SplitMode
rng = np.random.default_rng(20261125)


def signal(shape, dtype):
    n = int(np.prod(shape))
    x = np.sin(np.arange(n) / 37.0) * 100 + rng.normal(0, 0.01, n)
    return x.astype(dtype).reshape(shape)


def image(shape, dtype=np.uint8, modulo=256):
    rows, cols = shape[0], shape[1]
    base = np.add.outer(np.arange(rows) * 3, np.arange(cols) * 5) % modulo
    noise = rng.integers(0, 4, (rows, cols))
    grey = ((base + noise) % modulo).astype(dtype)
    if len(shape) == 3:
        return np.stack([np.roll(grey, k * 7, axis=1) for k in range(shape[2])], axis=-1)
    return grey


def plugin_cparams(module, **extra):
    return dict(codec=module.CODEC_ID, filters=[], splitmode=S.NEVER_SPLIT, **extra)


def builtin_cases():
    return {
        "zfp-acc-f4-2d": (signal((50, 70), "f4"), (25, 35), (8, 12), dict(codec=C.ZFP_ACC, codec_meta=253, filters=[])),
        # python-blosc2's default filters stay on: zfp then codes shuffled bytes.
        "zfp-acc-f8-3d-shuffle": (signal((20, 18, 22), "f8"), (10, 9, 11), (5, 4, 6),
                                  dict(codec=C.ZFP_ACC, codec_meta=254)),
        "zfp-prec-f4-1d": (signal((1000,), "f4"), (300,), (64,), dict(codec=C.ZFP_PREC, codec_meta=12, filters=[])),
        "zfp-prec-f8-4d": (signal((8, 9, 10, 11), "f8"), (4, 5, 6, 7), (4, 4, 4, 4),
                           dict(codec=C.ZFP_PREC, codec_meta=20, filters=[])),
        "zfp-rate-f4-2d": (signal((64, 48), "f4"), (32, 48), (16, 16), dict(codec=C.ZFP_RATE, codec_meta=50, filters=[])),
        "zfp-rate-f8-3d": (signal((16, 16, 16), "f8"), (8, 16, 16), (8, 8, 8),
                           dict(codec=C.ZFP_RATE, codec_meta=30, filters=[])),
        "ndlz4-u1": (image((100, 90)), (50, 45), (20, 30), dict(codec=C.NDLZ, codec_meta=4, filters=[])),
        "ndlz8-u1": (image((100, 90)), (64, 64), (32, 32), dict(codec=C.NDLZ, codec_meta=8, filters=[])),
        "ndlz4-f4-split": (signal((64, 64), "f4"), (32, 32), (16, 16),
                           dict(codec=C.NDLZ, codec_meta=4, filters=[F.SHUFFLE], splitmode=S.ALWAYS_SPLIT)),
        "ndcell-f4-zstd": (signal((40, 30), "f4"), (20, 30), (10, 15), dict(codec=C.ZSTD, filters=[F.NDCELL], filters_meta=[4])),
        "ndcell-i2-3d-lz4": (signal((12, 10, 14), "i2"), (6, 10, 7), (6, 5, 7),
                             dict(codec=C.LZ4, filters=[F.NDCELL, F.SHUFFLE], filters_meta=[3, 0])),
        "ndmean-f8-zstd": (signal((40, 30), "f8"), (20, 30), (10, 15), dict(codec=C.ZSTD, filters=[F.NDMEAN], filters_meta=[4])),
        "ndmean-i4-zstd": (signal((32, 32), "i4"), (16, 32), (16, 16), dict(codec=C.ZSTD, filters=[F.NDMEAN], filters_meta=[5])),
        # python-blosc2 4.14.1 refuses negative filters_meta here; 20 keeps 20 high bits.
        "int-trunc-i8-zstd": (signal((1000,), "i8") * 12345, (250,), (50,),
                              dict(codec=C.ZSTD, filters=[F.INT_TRUNC], filters_meta=[20])),
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


def write(outdir, name, array, chunks, blocks, cparams, codec, tolerance=0):
    path = os.path.join(outdir, name + ".b2nd")
    blosc2.asarray(array, urlpath=path, mode="w", chunks=chunks, blocks=blocks, cparams=blosc2.CParams(**cparams))
    reread = blosc2.open(path, mode="r")
    expect = {"array": reread[...]}
    for i in range(reread.schunk.nchunks):
        expect[f"chunk{i}"] = np.frombuffer(reread.schunk.decompress_chunk(i), dtype=np.uint8)
    np.savez(os.path.join(outdir, name + ".expect.npz"), **expect)
    print(json.dumps({"name": name, "codec": codec, "tolerance": tolerance}), flush=True)


def main(group, outdir):
    os.makedirs(outdir, exist_ok=True)
    if group == "builtin":
        names = {C.ZFP_ACC: "zfp_acc", C.ZFP_PREC: "zfp_prec", C.ZFP_RATE: "zfp_rate", C.NDLZ: "ndlz",
                 C.ZSTD: "zstd", C.LZ4: "lz4"}
        for name, (array, chunks, blocks, cparams) in builtin_cases().items():
            write(outdir, name, array, chunks, blocks, cparams, names[cparams["codec"]])
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
        import blosc2_openzl
        meta = int(blosc2_openzl.OpenZLProfile.OZLPROF_SH_ZSTD.value)
        write(outdir, "openzl-f4", signal((4000,), "f4"), (2000,), (1000,),
              dict(codec=38, codec_meta=meta, filters=[], splitmode=S.NEVER_SPLIT), "openzl")
    else:
        sys.exit(f"plugin_frames.py: unknown group {group}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
