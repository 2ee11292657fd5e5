"""preview.png (docs/preview.md): arrays python-blosc2 writes, drawn by the mount
and decoded by Pillow, must equal pixel for pixel what NumPy computes from the
array's [:] by the rules of the page; a 20,000 x 20,000 image is drawn from a
few percent of its bytes and a listing draws nothing; a commit through `data`
draws anew; hostile shapes and dtypes without a preview."""

import errno
import io
import os
import subprocess
import sys

import blosc2
import numpy as np
from PIL import Image

from harness import Harness, TestFailure, check, check_equal, read_file, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
LONG_SIDE = 1024
PLOT_HEIGHT = 256
PLOT_SAMPLES = 1 << 24
rng = np.random.default_rng(20261127)


# --- the rules, in NumPy ---

def side(s, long_side, limit=LONG_SIDE):
    return s if long_side <= limit else max(1, (2 * s * limit + long_side) // (2 * long_side))


def nearest(n, source):
    i = np.arange(n, dtype=np.int64)
    return ((2 * i + 1) * source) // (2 * n)


def finite_range(v):
    finite = np.isfinite(v)
    if not finite.any():
        return finite, 0.0, 0.0
    return finite, v[finite].min(), v[finite].max()


def scaled(v, lo, hi):
    if not hi > lo:
        return np.zeros(v.shape, np.uint8)
    with np.errstate(all="ignore"):
        x = np.rint(255.0 * (v - lo) / (hi - lo))
    x = np.where(np.isnan(x), 0, x)
    return np.clip(x, 0, 255).astype(np.uint8)


def levels_of(values, dtype, lo, hi):
    if dtype == np.uint8:
        return values.astype(np.uint8)
    if dtype == np.bool_:
        return np.where(values != 0, 255, 0).astype(np.uint8)
    return scaled(values.astype(np.float64), lo, hi)


def expected(a, limit=LONG_SIDE):
    """(PNG mode, pixels) of the preview of array a by the rules of docs/preview.md, the
    picture's long side at most `limit` (1024: preview.png; less: a thumbnail)."""
    dt = a.dtype
    limit = max(1, min(limit, LONG_SIDE))
    if a.ndim == 1:
        n = a.shape[0]
        m = min(n, PLOT_SAMPLES)
        s = a[(np.arange(m, dtype=np.int64) * n) // m].astype(np.float64)
        w = min(m, limit)
        height = min(PLOT_HEIGHT, limit)
        col = (np.arange(m, dtype=np.int64) * w) // m
        starts = np.searchsorted(col, np.arange(w))
        finite, lo, hi = finite_range(s)
        cmin = np.minimum.reduceat(np.where(finite, s, np.inf), starts)
        cmax = np.maximum.reduceat(np.where(finite, s, -np.inf), starts)
        img = np.full((height, w), 255, np.uint8)
        for j in np.nonzero(cmin <= cmax)[0]:
            top = height - 1 - int(levels_of(np.array([cmax[j]]), dt, lo, hi)[0]) * height // PLOT_HEIGHT
            bottom = height - 1 - int(levels_of(np.array([cmin[j]]), dt, lo, hi)[0]) * height // PLOT_HEIGHT
            img[top:bottom + 1, j] = 0
        return "L", img
    color = a.ndim >= 3 and dt.kind in "iu" and a.shape[-1] in (3, 4)
    img = a[(0,) * (a.ndim - (3 if color else 2))]
    rows, cols = img.shape[0], img.shape[1]
    long_side = max(rows, cols)
    h, w = side(rows, long_side, limit), side(cols, long_side, limit)
    sample = img[np.ix_(nearest(h, rows), nearest(w, cols))]
    mode = ("RGB" if a.shape[-1] == 3 else "RGBA") if color else "L"
    if dt == np.uint8 or dt == np.bool_:
        return mode, levels_of(sample, dt, 0, 0)
    v = sample.astype(np.float64)
    finite, lo, hi = finite_range(v)
    lev = scaled(v, lo, hi)
    if finite.all():
        return mode, lev
    return "LA", np.stack([np.where(finite, lev, 0), np.where(finite, 255, 0)], axis=-1).astype(np.uint8)


# --- reading the mount ---

def decode(png):
    image = Image.open(io.BytesIO(png))
    image.load()
    return image.mode, np.asarray(image), image.info.get("Description", "")


def check_preview(mnt, a, what):
    path = os.path.join(mnt, "preview.png")
    png = read_file(path)
    check(png[:8] == b"\x89PNG\r\n\x1a\n", f"{what}: preview.png is not a PNG")
    mode, pixels, description = decode(png)
    want_mode, want = expected(a)
    check_equal(mode, want_mode, f"{what}: PNG mode")
    check_equal(pixels.shape, want.shape, f"{what}: picture shape")
    if not np.array_equal(pixels, want):
        bad = np.argwhere(pixels != want)
        raise TestFailure(f"{what}: {len(bad)} pixels differ, first at {tuple(bad[0])}: "
                          f"{pixels[tuple(bad[0])]} where the rules give {want[tuple(bad[0])]}")
    shape = "(" + ", ".join(str(s) for s in a.shape) + ("," if a.ndim == 1 else "") + ")"
    check(f"shape={shape}" in description and " lo=" in description and " hi=" in description and "slice=[" in description,
          f"{what}: the tEXt Description lacks shape, slice, lo or hi: {description!r}")
    # The open that drew it tells the kernel to ask for the size again: a note
    # sent after the open's reply, so the new size shows a moment later.
    check(wait_until(lambda: os.stat(path).st_size == len(png), seconds=10),
          f"{what}: stat size after the drawing: {os.stat(path).st_size}, the PNG has {len(png)}")
    return png


def write_array(h, name, a, **kwargs):
    path = os.path.join(h.new_dir("arrays"), name + ".b2nd")
    blosc2.asarray(a, urlpath=path, mode="w", **kwargs)
    return path


def root_names(mnt):
    return set(os.listdir(mnt))


# --- tests ---

def arrays_python_blosc2_writes(h):
    f8 = np.sin(np.add.outer(np.arange(1500) / 50.0, np.arange(900) / 70.0)) * 1e3
    f8[100:140, 200:260] = np.nan
    f8[5, 5] = np.inf
    f8[6, 6] = -np.inf
    stack = (np.arange(5 * 300 * 200, dtype=np.float32).reshape(5, 300, 200) % 977) - 300.5
    cases = {
        "f8-nan-2d": (f8, dict(chunks=(400, 300), blocks=(50, 64))),
        "u16-image": ((np.add.outer(np.arange(700) * 37, np.arange(500) * 11) % 60000).astype(np.uint16),
                      dict(chunks=(256, 256), blocks=(64, 64))),
        "u8-rgb": (rng.integers(0, 256, (600, 1300, 3), dtype=np.uint8), dict(chunks=(200, 500, 3), blocks=(50, 100, 3))),
        "u8-rgba": (rng.integers(0, 256, (50, 40, 4), dtype=np.uint8), dict(chunks=(32, 32, 4), blocks=(8, 8, 4))),
        "u16-rgb-scaled": ((rng.integers(0, 4096, (1100, 90, 3))).astype(np.uint16), dict(chunks=(300, 90, 3), blocks=(30, 45, 3))),
        "i16-rgb-4d": (rng.integers(-500, 500, (2, 40, 30, 3)).astype(np.int16), dict(chunks=(1, 40, 30, 3), blocks=(1, 8, 30, 3))),
        "f4-stack-3d": (stack, dict(chunks=(2, 128, 128), blocks=(1, 32, 64))),
        "bool-2d": (np.add.outer(np.arange(300), np.arange(170)) % 7 == 0, dict(chunks=(100, 100), blocks=(20, 50))),
        "f2-2d": (np.linspace(-3, 3, 64 * 80).reshape(64, 80).astype(np.float16), dict(chunks=(32, 80), blocks=(16, 16))),
        "big-endian-i4": (np.arange(120 * 90, dtype=">i4").reshape(120, 90) * 1000, dict(chunks=(60, 90), blocks=(20, 30))),
        "u8-gray-1x-rgb-last-dim-5": (rng.integers(0, 256, (30, 20, 5), dtype=np.uint8), dict(chunks=(30, 20, 5), blocks=(10, 10, 5))),
        "f8-1d-short": (np.cos(np.arange(700) / 30.0), dict(chunks=(300,), blocks=(64,))),
        "i16-1d-plot-3000": ((np.arange(3000) % 251 - 100).astype(np.int16), dict(chunks=(1000,), blocks=(128,))),
        "u8-1d-as-stored": ((np.arange(5000) % 200).astype(np.uint8), dict(chunks=(2048,), blocks=(512,))),
    }
    for name, (a, kwargs) in cases.items():
        path = write_array(h, name, a, **kwargs)
        a = blosc2.open(path, mode="r")[:]  # what python-blosc2 reads back
        mnt = h.mount(path, ["-o", "ro"])
        check("preview.png" in root_names(mnt), f"{name}: no preview.png in the listing")
        check_preview(mnt, a, name)
        h.unmount(mnt)


def long_series_is_sampled(h):
    """Just over the 16 Mi sampling bound: the plot samples floor(k * N / M)."""
    n = PLOT_SAMPLES + 4099
    a = ((np.arange(n, dtype=np.int64) * 7919) % 30011 - 15000).astype(np.int16)
    a[n // 2] = 32000  # a spike that a sample must hit or miss by the rule
    path = write_array(h, "i16-1d-long", a, chunks=(1 << 21,), blocks=(1 << 16,))
    mnt = h.mount(path, ["-o", "ro"])
    check_preview(mnt, blosc2.open(path, mode="r")[:], "1-D, 16 Mi + 4099 elements")


def plugin_images(h):
    """J2K and HTJ2K images as the plugin tests write them (plugin_frames.py)."""
    outdir = h.new_dir("plugins")
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    for group in ("j2k", "htj2k"):
        r = subprocess.run([sys.executable, os.path.join(HERE, "plugin_frames.py"), group, outdir],
                           capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, env=env)
        if r.returncode != 0:
            raise TestFailure(f"plugin_frames.py {group} failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    for name in ("j2k-u8-rgb", "j2k-u16", "htj2k-openhtj2k-u8-grey", "htj2k-openhtj2k-u16"):
        path = os.path.join(outdir, name + ".b2nd")
        a = np.load(os.path.join(outdir, name + ".expect.npz"))["array"]
        mnt = h.mount(path, ["-o", "ro"])
        check_preview(mnt, a, name)
        h.unmount(mnt)


def no_preview_without_numbers(h):
    """Complex, strings, structured, 0-d and 0-element arrays have no preview.png."""
    cases = {
        "complex": np.arange(12, dtype=np.complex128).reshape(3, 4),
        "bytes": np.array([[b"ab", b"cd"], [b"ef", b"gh"]]),
        "structured": np.zeros((4, 5), dtype=[("a", "<i4"), ("b", "<f8")]),
        "zero-d": np.array(5.0),
        "no-elements": np.zeros((0, 5), dtype=np.float32),
    }
    for name, a in cases.items():
        path = write_array(h, name, a)
        mnt = h.mount(path, ["-o", "ro"])
        names = root_names(mnt)
        check("array.npy" in names or name == "no-elements", f"{name}: not mounted as an array: {sorted(names)}")
        check("preview.png" not in names, f"{name}: preview.png listed")
        try:
            os.stat(os.path.join(mnt, "preview.png"))
            raise TestFailure(f"{name}: preview.png exists")
        except FileNotFoundError:
            pass
        h.unmount(mnt)


def read_only(h):
    path = write_array(h, "ro", np.arange(100, dtype=np.float64).reshape(10, 10))
    for options, want in ((["-o", "ro"], errno.EROFS), ([], errno.EACCES)):
        mnt = h.mount(path, options)
        target = os.path.join(mnt, "preview.png")
        for flags in (os.O_WRONLY, os.O_RDWR, os.O_WRONLY | os.O_TRUNC):
            try:
                os.close(os.open(target, flags))
                raise TestFailure(f"preview.png opened for writing ({options})")
            except OSError as e:
                check_equal(e.errno, want, f"errno of writing preview.png ({options or 'read-write'})")
        check_equal(os.stat(target).st_mode & 0o222, 0, "write bits of preview.png")
        h.unmount(mnt)


def big_image_reads_little(h):
    """20,000 x 20,000 uint8 in 256 x 256 chunks of one-row blocks: the drawing
    decodes only the blocks of the 1024 rows it samples, and `ls -l` draws nothing."""
    n, c = 20000, 256
    path = os.path.join(h.new_dir("big"), "big.b2nd")
    arr = blosc2.empty((n, n), dtype=np.uint8, chunks=(c, c), blocks=(1, c), urlpath=path, mode="w")
    cols = np.arange(n)
    for r0 in range(0, n, c):
        rows = np.arange(r0, min(r0 + c, n))
        # Constant along each block (one row of one chunk): runs that compress to nothing.
        arr[r0:r0 + len(rows), :] = ((rows[:, None] * 7 + (cols[None, :] // c) * 13) % 256).astype(np.uint8)
    del arr
    mnt = h.mount(path, ["-o", "ro"])
    target = os.path.join(mnt, "preview.png")
    before = h.cache_stats(mnt)
    listing = subprocess.run(["ls", "-l", mnt], capture_output=True, text=True, timeout=60)
    check(listing.returncode == 0 and "preview.png" in listing.stdout, f"ls -l: {listing.stdout} {listing.stderr}")
    bound = os.stat(target).st_size
    after_ls = h.cache_stats(mnt)
    check_equal((after_ls["misses"], after_ls["decoded_blocks"]), (before["misses"], before["decoded_blocks"]),
                "chunk cache misses and decoded blocks across ls -l (a listing must not draw)")
    png = read_file(target)
    stats = h.cache_stats(mnt)
    decoded = stats["decoded_bytes"] - after_ls["decoded_bytes"]
    misses = stats["misses"] - after_ls["misses"]
    fraction = decoded / (n * n)
    print(f"  20000x20000 u8: stat before drawing {bound} B, PNG {len(png)} B; chunks touched {misses} of "
          f"{((n + c - 1) // c) ** 2}, blocks decoded {stats['decoded_blocks'] - after_ls['decoded_blocks']}, "
          f"bytes decoded {decoded} ({100 * fraction:.2f} % of the array)", flush=True)
    check(bound >= len(png), f"stat before the drawing ({bound}) is below the PNG's size {len(png)}")
    check(fraction <= 0.06, f"the drawing decoded {100 * fraction:.1f} % of the array")
    mode, pixels, _ = decode(png)
    rows, cols_ = nearest(LONG_SIDE, n), nearest(LONG_SIDE, n)
    want = ((rows[:, None] * 7 + (cols_[None, :] // c) * 13) % 256).astype(np.uint8)
    check_equal(mode, "L", "mode")
    check(np.array_equal(pixels, want), "the 20000x20000 preview differs from the rules")
    # Drawn once: a second read decodes nothing more.
    read_file(target)
    check_equal(h.cache_stats(mnt)["decoded_blocks"], stats["decoded_blocks"], "decoded blocks after a second read")


def commit_draws_anew(h):
    """cp into `data` of a read-write mount: after the commit preview.png shows the new values."""
    shape = (120, 200)
    old = np.linspace(0, 1, shape[0] * shape[1]).reshape(shape)
    path = write_array(h, "rw", old, chunks=shape, blocks=shape)  # one block: data is the C-order array
    mnt = h.mount(path)
    check_preview(mnt, old, "before the commit")
    new = np.cos(np.arange(shape[0] * shape[1]) / 100.0).reshape(shape) * 5
    new[:10, :10] = np.nan
    source = os.path.join(h.new_dir("src"), "new.bin")
    new.tofile(source)
    r = subprocess.run(["cp", source, os.path.join(mnt, "data")], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"cp into data failed: {r.stderr}")
    check(np.array_equal(blosc2.open(path, mode="r")[:], new, equal_nan=True), "python-blosc2 reads the new values")
    check_preview(mnt, new, "after the commit")
    h.unmount(mnt)
    mnt = h.mount(path, ["-o", "ro"])
    check_preview(mnt, new, "after a remount")


def hostile_shapes(h):
    """1 x 10^9 and 10^6 x 2 are drawn from their 1,024 samples; a 0-d array has none."""
    path = os.path.join(h.new_dir("hostile"), "wide.b2nd")
    blosc2.zeros((1, 10 ** 9), dtype=np.uint8, urlpath=path, mode="w", chunks=(1, 1 << 22), blocks=(1, 1 << 16))
    mnt = h.mount(path, ["-o", "ro"])
    png = read_file(os.path.join(mnt, "preview.png"))
    mode, pixels, _ = decode(png)
    check_equal((mode, pixels.shape, int(pixels.max())), ("L", (1, 1024), 0), "1 x 10^9 zeros")
    h.unmount(mnt)
    tall = np.arange(2 * 10 ** 6, dtype=np.float64).reshape(10 ** 6, 2)
    path = write_array(h, "tall", tall, chunks=(1 << 17, 2), blocks=(1 << 12, 2))
    mnt = h.mount(path, ["-o", "ro"])
    check_preview(mnt, tall, "10^6 x 2")
    h.unmount(mnt)


def store_leaves(h):
    """A store's leaves are arrays too: embedded (threshold) and in frames of their own."""
    path = os.path.join(h.new_dir("store"), "s.b2z")
    values = {"/small": np.arange(30 * 20, dtype=np.int32).reshape(30, 20) % 17,
              "/group/image": rng.integers(0, 256, (40, 50, 3), dtype=np.uint8),
              "/group/series": np.sin(np.arange(4000) / 100.0)}
    with blosc2.TreeStore(path, mode="w", threshold=4000) as s:
        for key, value in values.items():
            s[key] = value
    mnt = h.mount(path, ["-o", "ro"])
    for key, value in values.items():
        check_preview(os.path.join(mnt, key.strip("/")), value, f"store leaf {key}")


def vlmeta_commit_keeps_the_drawing(h):
    """A commit that leaves chunks and metalayers alone keeps the drawing; one of the chunks draws anew."""
    shape = (60, 80)
    a = np.arange(shape[0] * shape[1], dtype=np.float32).reshape(shape)
    path = write_array(h, "vlmeta", a, chunks=shape, blocks=shape)
    mnt = h.mount(path)
    check_preview(mnt, a, "before")
    drawn = h.cache_stats(mnt)["decoded_blocks"]
    with open(os.path.join(mnt, "vlmeta", "note"), "wb") as f:
        f.write(b"\xa5hello")  # msgpack "hello"
    check_preview(mnt, a, "after a vlmeta commit")
    check_equal(h.cache_stats(mnt)["decoded_blocks"], drawn, "blocks decoded by the vlmeta commit's preview")


def main():
    h = Harness("preview.png", watchdog_seconds=600)
    h.require_fuse()
    h.test("arrays python-blosc2 writes: preview.png pixels follow the rules", arrays_python_blosc2_writes, h)
    h.test("1-D longer than the sampling bound", long_series_is_sampled, h)
    h.test("J2K and HTJ2K images", plugin_images, h)
    h.test("complex, strings, structured, 0-d, 0-element: no preview.png", no_preview_without_numbers, h)
    h.test("preview.png is read-only (EROFS / EACCES)", read_only, h)
    h.test("20000 x 20000: a few percent decoded, ls -l draws nothing", big_image_reads_little, h)
    h.test("cp into data and commit: drawn anew", commit_draws_anew, h)
    h.test("hostile shapes: 1 x 10^9, 10^6 x 2", hostile_shapes, h)
    h.test("store leaves, embedded and own frames", store_leaves, h)
    h.test("a vlmeta commit keeps the drawing", vlmeta_commit_keeps_the_drawing, h)
    h.finish()


if __name__ == "__main__":
    main()
