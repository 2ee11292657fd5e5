"""The io_uring rows of bench/run.sh: the same work through mounts made with
-o io_uring=on and with -o io_uring=off (/dev/fuse), cold (the page cache
dropped, a fresh mount), the two taking turns round by round (and python-blosc2
in-process where a row compares with it). Each figure is the median of at least
7 rounds; a ratio is the median of the rounds' ratios. Switches the kernel's
FUSE over io_uring on for the run (as root) and puts back what it found
(tests/integration/uring_switch.py). Prints markdown rows
"| what | io_uring | /dev/fuse (and python-blosc2) | — | target | verdict |".
The small-file and metadata rows run with the frames' bytes in the page cache
(a fresh mount each time): the disk's cold reads, the same work on both paths,
would otherwise be most of what they time.

    io_uring.py BLOSC2FS SCRATCH SIZE_MB RUNS

Targets (issue 53): the small-file and metadata rows at least 2x the /dev/fuse
path; no row slower than it beyond noise (10 %); the Zarr whole 2,000^2 read at
least 0.5x python-blosc2 in-process; the 8,000^2 slice at most 3x and the column
at most 2x python-blosc2.
"""

import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import uring_switch  # noqa: E402
from collection_mounts import make_folder  # noqa: E402
from remote import MKFRAME, drop_caches, log, mount, unmount  # noqa: E402
from zarr_view import make, noisy  # noqa: E402

import blosc2  # noqa: E402
import numpy as np  # noqa: E402
import zarr  # noqa: E402
from bench_rows import print_rows, row, verdict  # noqa: E402

BINARY, SCRATCH, SIZE_MB, RUNS = sys.argv[1], sys.argv[2], int(sys.argv[3]), max(int(sys.argv[4]), 7)
DATA = os.path.join(SCRATCH, "io_uring")
ZARR = os.path.join(SCRATCH, "zarr")  # the zarr group's arrays (zarr_view.py), made once for both
MNT = os.path.join(SCRATCH, "io_uring-mnt")
TRANSPORTS = {"io_uring": ["-o", "ro,io_uring=on"], "dev_fuse": ["-o", "ro,io_uring=off"]}
NOISE = 1.10  # "not slower": the io_uring rounds' median at most 10 % above /dev/fuse's


def in_page_cache(path):
    """Reads the file, or every file under the folder, so that its bytes are in the page cache."""
    paths = [path] if os.path.isfile(path) else [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs]
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass


def rounds(works, warm=False):
    """{name: (work, frame or None)}, RUNS rounds, the order turning each round; a
    work with a frame gets a fresh mount of it over its transport ("io_uring" or
    "dev_fuse" in its name), after dropping the page cache (cold) or, `warm`,
    with the frame's bytes read into it. {name: [seconds]}."""
    names = list(works)
    times = {n: [] for n in names}
    for r in range(RUNS):
        for n in names[r % len(names):] + names[:r % len(names)]:
            work, frame = works[n]
            unmount(MNT)
            if warm and frame:
                in_page_cache(frame)
            elif not warm:
                drop_caches()
            if frame:
                mount(frame, MNT, TRANSPORTS["io_uring" if "io_uring" in n else "dev_fuse"])
            start = time.monotonic()
            work()
            times[n].append(time.monotonic() - start)
            unmount(MNT)
    return times


def per_round(times, num, den):
    return statistics.median(a / b for a, b in zip(times[num], times[den]))


def fmt(seconds):
    return f"{statistics.median(seconds) * 1000:.1f} ms ({min(seconds) * 1000:.1f}–{max(seconds) * 1000:.1f})"


def transport_row(what, work, frame, target_speedup, extra=None):
    """io_uring against /dev/fuse on one work; extra: {name: work} timed in the same
    rounds without a mount (python-blosc2), returned with the times. The rows with a
    speedup target (small files, metadata) measure the requests: the frame's bytes
    are in the page cache, the mount is fresh (its chunk cache empty); the others
    are cold, as python-blosc2's reads beside them."""
    works = {"io_uring": (work, frame), "dev_fuse": (work, frame)}
    works.update({n: (w, None) for n, w in (extra or {}).items()})
    t = rounds(works, warm=bool(target_speedup))
    ratio = per_round(t, "io_uring", "dev_fuse")
    if target_speedup:
        target, ok = f"io_uring ≥ {target_speedup} × /dev/fuse (time ≤ {1 / target_speedup:.2f} ×)", \
            ratio <= 1 / target_speedup
    else:
        target, ok = f"not slower than /dev/fuse (time ≤ {NOISE:.2f} ×)", ratio <= NOISE
    row(f"io_uring: {what}; per round io_uring takes {ratio:.2f} × /dev/fuse's time", fmt(t["io_uring"]),
        f"/dev/fuse {fmt(t['dev_fuse'])}", target, verdict(ok))
    return t


def read_each(directory):
    """Python's open/read/close of every file of `directory` (LOOKUP, OPEN, the IOCTL of
    isatty(), READ: what a reader of chunk files pays per file)."""
    def work():
        for name in sorted(os.listdir(directory)):
            with open(os.path.join(directory, name), "rb") as f:
                f.read()
    return work


def small_chunk_files():
    path = os.path.join(DATA, "small-chunks.b2nd")
    if not os.path.exists(path):
        log(f"making {path}: 2,000 chunks of 6,400 bytes")
        rng = np.random.default_rng(53)
        values = np.cumsum(rng.normal(size=2000 * 1600)).astype(np.float32)
        blosc2.asarray(values, urlpath=path, mode="w", chunks=(1600,), blocks=(400,))
    transport_row("first read of 2,000 chunk files (chunks/N, 6,400 bytes decoded each) after mounting, "
                  "Python open/read/close of each", read_each(os.path.join(MNT, "chunks")), path, 2)


def list_chunks():
    path = os.path.join(DATA, "many-10000.b2frame")
    if not os.path.exists(path):
        subprocess.run([MKFRAME, "many-chunks", path, "10000"], check=True, stdout=subprocess.DEVNULL)

    def ls():
        subprocess.run(["ls", "-l", os.path.join(MNT, "chunks")], check=True, stdout=subprocess.DEVNULL)
    transport_row("`ls -l chunks/` of a frame of 10,000 chunks after mounting", ls, path, 2)


def collection_vlmeta():
    folder = os.path.join(DATA, "collection-2000")
    make_folder(folder, 2000)

    def read_all():
        for name in sorted(os.listdir(MNT)):
            if name.endswith(".b2nd"):
                with open(os.path.join(MNT, name, "vlmeta", "run"), "rb") as f:
                    f.read()
    transport_row("a local folder of 2,000 python-blosc2 arrays mounted as a collection: every dataset's "
                  "vlmeta/run read after mounting (Python open/read/close)", read_all, folder, 2)


def zarr_whole():
    cases = [("2000 x 2000 f4 (256 x 256 chunks)", "squares.b2nd", (2000, 2000), (256, 256), (64, 64), 0.5)]
    size_mb = min(SIZE_MB, 512)
    cases.append((f"{size_mb} MB f4 (4 MB chunks)", f"bars-{size_mb}.b2nd", (size_mb * 256, 1024), (1024, 1024),
                   (64, 1024), None))
    for label, name, shape, chunks, blocks, vs_blosc2 in cases:
        path = os.path.join(ZARR, name)
        make(path, shape, chunks, blocks, noisy)
        t = transport_row(f"zarr-python reads the whole {label} from the Zarr view",
                          lambda: zarr.open_array(MNT, mode="r")[:], path, None,
                          {"python-blosc2": lambda: blosc2.open(path)[:]})
        if vs_blosc2:
            speed = per_round(t, "python-blosc2", "io_uring")
            row(f"io_uring: zarr-python's whole {label} against python-blosc2 [:] in-process; per round "
                f"{speed:.2f} × in-process", fmt(t["io_uring"]), f"python-blosc2 {fmt(t['python-blosc2'])}",
                f"≥ {vs_blosc2} × python-blosc2", verdict(speed >= vs_blosc2))


def zarr_sub_arrays():
    path = os.path.join(ZARR, "tiles.b2nd")
    make(path, (8000, 8000), (1000, 1000), (100, 1000), noisy)
    for what, sel, factor in (("[4000:4100, 4000:4100]", (slice(4000, 4100), slice(4000, 4100)), 3),
                              ("[:, 4500]", (slice(None), 4500), 2)):
        t = transport_row(f"zarr-python reads {what} of 8000^2 f4 (chunks 1000^2, blocks 100 x 1000)",
                          lambda sel=sel: zarr.open_array(MNT, mode="r")[sel], path, None,
                          {"python-blosc2": lambda sel=sel: blosc2.open(path)[sel]})
        ratio = per_round(t, "io_uring", "python-blosc2")
        row(f"io_uring: zarr-python's {what} of 8000^2 against python-blosc2; per round {ratio:.2f} × its time",
            fmt(t["io_uring"]), f"python-blosc2 {fmt(t['python-blosc2'])}", f"≤ {factor} × python-blosc2",
            verdict(ratio <= factor))


def cat_data():
    size_mb = min(SIZE_MB, 512)
    path = os.path.join(DATA, f"f32-{size_mb}.b2frame")
    if not os.path.exists(path):
        subprocess.run([MKFRAME, "float32-zstd", path, str(size_mb), "1024"], check=True, stdout=subprocess.DEVNULL)

    def cat():
        subprocess.run(["cat", os.path.join(MNT, "data")], check=True, stdout=subprocess.DEVNULL)
    transport_row(f"`cat data` of a {size_mb} MB noisy float32 frame (zstd, 1 MB chunks)", cat, path, None)


def main():
    why_not = uring_switch.unavailable()
    if why_not:
        row("io_uring rows", f"n/a ({why_not})", "—", "—", "n/a")
    else:
        os.makedirs(DATA, exist_ok=True)
        os.makedirs(ZARR, exist_ok=True)
        found = uring_switch.hold()
        try:
            log(f"io_uring rows, {RUNS} rounds each ({uring_switch.PARAMETER} was {found}; put back at the end)")
            for group in (small_chunk_files, list_chunks, collection_vlmeta, zarr_whole, zarr_sub_arrays, cat_data):
                group()
        finally:
            unmount(MNT)
            uring_switch.release()
    print_rows()


if __name__ == "__main__":
    main()
