"""The python-blosc2 side of bench/run.sh's `codecs` group: writes one b2nd frame
per plugin codec or filter, and times python-blosc2 decoding its chunks on one
thread, so that `codec_bench --frame` can be timed on the same chunks.

    python plugin_codecs.py list
        one line per case: NAME|codec|filters|description
    python plugin_codecs.py make NAME FRAME RAW
        writes FRAME with python-blosc2, then RAW: its chunks as python-blosc2
        decodes them, one after another (each file unless it exists)
    python plugin_codecs.py time NAME FRAME [REPS]
        decodes every chunk of FRAME, held in memory, REPS times (default 3) with
        `schunk.decompress_chunk(i, dst)` and nthreads 1; prints key=value: mb,
        ratio, mbps (best pass, wall clock), cpu_mbps (that pass's process CPU
        time, which counts any thread a plugin starts), nthreads, nchunks

    python plugin_codecs.py openzl BLOSC2FS WORKDIR [MB] [RUNS]
        the OpenZL row (issue #38): writes WORKDIR/openzl-sh-bd-zstd-MB.b2nd (float32,
        OpenZL profile SH_BD_ZSTD, python-blosc2's default chunks and blocks) unless it
        exists, then RUNS times in turn: python-blosc2's `[:]` in this process (default
        threads) and `cat data` through a fresh mount (the daemon loads blosc2-openzl's
        library, found through this python's bin directory on its PATH). Prints
        key=value: mb, ratio, mount_mbps, python_mbps (medians), ratio_x, and all runs.

Run with the test venv's python (scripts/test-venv.sh), which has the pinned
python-blosc2 and the J2K/HTJ2K/OpenZL plugins (AGPL-3: they only write and decode
the benchmark's data here, nothing links them).
"""

import os
import statistics
import subprocess
import sys
import time

import blosc2
import numpy as np

C, F, S = blosc2.Codec, blosc2.Filter, blosc2.SplitMode


def signal(shape):
    """Multi-channel float32 recording: a slow sine per channel, phases apart, plus noise."""
    channels, samples = shape
    rng = np.random.default_rng(20261125)
    t = np.arange(samples, dtype=np.float64) * 1e-3
    out = np.empty(shape, np.float32)
    for c in range(channels):
        out[c] = 100 * np.sin(t + c * 0.05) + rng.normal(0, 0.05, samples)
    return out


def image(shape):
    """8-bit greyscale picture: shading in steps of 8 (flat areas), sensor noise on a quarter of
    it, a dark background band: NDLZ's kind of picture (cells that repeat or are constant)."""
    rows, cols = shape
    rng = np.random.default_rng(20261125)
    c = np.arange(cols, dtype=np.float32)
    out = np.empty(shape, np.uint8)
    for r0 in range(0, rows, 512):
        r = np.arange(r0, min(rows, r0 + 512), dtype=np.float32)[:, None]
        shade = (128 + 60 * np.sin(r / 97) * np.cos(c / 131) + 40 * np.sin((r + c) / 53)) // 8 * 8
        textured = np.sin(r / 41) * np.cos(c / 59) > 0.5
        band = np.where(textured, shade + rng.integers(0, 3, (len(r), cols)), shade)
        band[:, : cols // 8] = 16
        out[r0 : r0 + len(r)] = np.clip(band, 0, 255).astype(np.uint8)
    return out


_plugin_ids = {}


def plugin(name):
    """Registers a PyPI plugin codec in this process, once; returns its codec id."""
    if name in _plugin_ids:
        return _plugin_ids[name]
    if name == "j2k":
        import blosc2_j2k as module

        module.register_codec()
        module.configure(backend="grok")
        module.set_params_defaults(num_threads=1)  # Grok's own pool, else one thread per core
    else:
        import blosc2_htj2k as module

        module.register_codec()
        module.configure(backend="openhtj2k")
    _plugin_ids[name] = module.CODEC_ID
    return module.CODEC_ID


SIGNAL = ((512, 32768), (64, 4096), (16, 1024))  # 64 MiB f4: 1 MiB chunks, 64 KiB blocks
IMAGE = ((8192, 8192), (1024, 1024), (256, 256))  # 64 MiB u1: 1 MiB chunks, 64 KiB blocks
IMAGE_JPEG = ((4096, 4096), (1024, 1024), (512, 512))  # 16 MiB u1: 256 KiB images

# name -> (data, geometry, cparams, codec label, filters label, plugin to load)
CASES = {
    "zfp-acc": (signal, SIGNAL, dict(codec=C.ZFP_ACC, codec_meta=253, filters=[]), "ZFP_ACC 1e-3", "none", None),
    "zfp-prec": (signal, SIGNAL, dict(codec=C.ZFP_PREC, codec_meta=16, filters=[]), "ZFP_PREC 16 bits", "none", None),
    "zfp-rate": (signal, SIGNAL, dict(codec=C.ZFP_RATE, codec_meta=50, filters=[]), "ZFP_RATE 50%", "none", None),
    "ndcell-zstd": (signal, SIGNAL, dict(codec=C.ZSTD, clevel=5, filters=[F.NDCELL, F.SHUFFLE], filters_meta=[4, 0]),
                    "ZSTD 5", "NDCELL 4, SHUFFLE", None),
    "ndmean-zstd": (signal, SIGNAL, dict(codec=C.ZSTD, clevel=5, filters=[F.NDMEAN, F.SHUFFLE], filters_meta=[4, 0]),
                    "ZSTD 5", "NDMEAN 4, SHUFFLE", None),
    "ndlz4": (image, IMAGE, dict(codec=C.NDLZ, codec_meta=4, filters=[]), "NDLZ 4x4", "none", None),
    "ndlz8": (image, IMAGE, dict(codec=C.NDLZ, codec_meta=8, filters=[]), "NDLZ 8x8", "none", None),
    "j2k": (image, IMAGE_JPEG, dict(filters=[], splitmode=S.NEVER_SPLIT), "J2K lossless (Grok writer)", "none", "j2k"),
    "htj2k": (image, IMAGE_JPEG, dict(filters=[], splitmode=S.NEVER_SPLIT), "HTJ2K lossless (OpenHTJ2K writer)", "none",
              "htj2k"),
}


def describe(name):
    data, (shape, chunks, blocks), _, _, _, _ = CASES[name]
    kind = "f4 signal" if data is signal else "u1 image"
    return f"{kind} {shape[0]}x{shape[1]}, chunks {chunks[0]}x{chunks[1]}, blocks {blocks[0]}x{blocks[1]}"


def write_frame(name, path):
    data, (shape, chunks, blocks), cparams, _, _, plugin_name = CASES[name]
    cparams = dict(cparams)
    if plugin_name:
        cparams["codec"] = plugin(plugin_name)
    tmp = path + ".tmp.b2nd"  # python-blosc2 picks the format by the suffix
    blosc2.asarray(data(shape), urlpath=tmp, mode="w", chunks=chunks, blocks=blocks,
                   cparams=blosc2.CParams(**cparams))
    os.replace(tmp, path)


def load(name, frame):
    """The frame as an array in memory, read once, with the plugin its codec needs. Keep the
    array while using its schunk: freeing the array frees the schunk."""
    plugin_name = CASES[name][5]
    if plugin_name:
        plugin(plugin_name)
    with open(frame, "rb") as f:
        return blosc2.ndarray_from_cframe(f.read(), copy=True)


def make_files(name, frame, raw):
    if not os.path.exists(frame):
        write_frame(name, frame)
    if not os.path.exists(raw):
        array = load(name, frame)
        schunk = array.schunk
        with open(raw + ".tmp", "wb") as f:
            for i in range(schunk.nchunks):
                f.write(schunk.decompress_chunk(i))
        os.replace(raw + ".tmp", raw)


def time_decoding(name, frame, reps):
    blosc2.set_nthreads(1)
    array = load(name, frame)
    schunk = array.schunk
    schunk.dparams = blosc2.DParams(nthreads=1)
    out = np.empty(schunk.chunksize, np.uint8)
    best_wall = best_cpu = float("inf")
    for _ in range(reps):
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for i in range(schunk.nchunks):
            schunk.decompress_chunk(i, dst=out)
        best_wall = min(best_wall, time.perf_counter() - wall0)
        best_cpu = min(best_cpu, time.process_time() - cpu0)
    mb = schunk.nchunks * schunk.chunksize / 1e6  # every chunk is whole: the shapes divide
    print(f"mb={mb:.1f} ratio={schunk.cratio:.2f} mbps={mb / best_wall:.1f} cpu_mbps={mb / best_cpu:.1f} "
          f"nthreads={schunk.dparams.nthreads} nchunks={schunk.nchunks}")


def openzl_row(binary, workdir, mb, runs):
    import blosc2_openzl  # noqa: F401  (loaded here, c-blosc2's dlopen by name finds it)

    os.makedirs(workdir, exist_ok=True)
    frame = os.path.join(workdir, f"openzl-sh-bd-zstd-{mb}.b2nd")
    if not os.path.exists(frame):
        data = signal((mb * 2**20 // 4 // 32768, 32768))
        tmp = frame + ".tmp.b2nd"
        blosc2.asarray(data, urlpath=tmp, mode="w",
                       cparams=blosc2.CParams(codec=C.OPENZL, codec_meta=6, filters=[], splitmode=S.NEVER_SPLIT))
        del data
        os.replace(tmp, frame)
    array = blosc2.open(frame, mode="r")
    nbytes = array.schunk.nbytes
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    mnt = os.path.join(workdir, "mnt")
    os.makedirs(mnt, exist_ok=True)
    mount_mbps, python_mbps = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        whole = array[:]
        python_mbps.append(nbytes / 1e6 / (time.perf_counter() - t0))
        del whole
        r = subprocess.run([binary, "-o", "ro", frame, mnt], env=env, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            sys.exit(f"mounting {frame} failed: {r.stderr.strip()}")
        try:
            t0 = time.perf_counter()
            subprocess.run(["cat", os.path.join(mnt, "data")], stdout=subprocess.DEVNULL, check=True, timeout=600)
            mount_mbps.append(nbytes / 1e6 / (time.perf_counter() - t0))
        finally:
            subprocess.run(["fusermount3", "-u", mnt], check=True, timeout=120)
    m, p = statistics.median(mount_mbps), statistics.median(python_mbps)
    print(f"mb={nbytes / 1e6:.1f} ratio={array.schunk.cratio:.2f} chunks={'x'.join(map(str, array.chunks))} "
          f"blocks={'x'.join(map(str, array.blocks))} "
          f"mount_mbps={m:.0f} python_mbps={p:.0f} ratio_x={m / p:.2f} "
          f"mount_runs={','.join(f'{x:.0f}' for x in mount_mbps)} python_runs={','.join(f'{x:.0f}' for x in python_mbps)}")


def main(argv):
    command, args = (argv[1], argv[2:]) if len(argv) > 1 else ("", [])
    if command == "list" and not args:
        for name, case in CASES.items():
            print(f"{name}|{case[3]}|{case[4]}|{describe(name)}")
    elif command == "make" and len(args) == 3:
        make_files(*args)
    elif command == "time" and len(args) in (2, 3):
        time_decoding(args[0], args[1], int(args[2]) if len(args) == 3 else 3)
    elif command == "openzl" and len(args) in (2, 3, 4):
        openzl_row(args[0], args[1], int(args[2]) if len(args) > 2 else 512, int(args[3]) if len(args) > 3 else 3)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
