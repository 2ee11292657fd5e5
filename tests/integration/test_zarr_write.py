"""Writes through the Zarr view (docs/zarr.md, "Writing"): zarr-python and
xarray write regions of an array mounted read-write (each chunk file written
as a temporary file renamed over the key, partial chunks read, changed and
written whole), set attributes (zarr.json rewritten); python-blosc2 reads the
result after the unmount, and chunks nobody wrote keep their stored bytes.
A SIGKILL of the daemon during chunk writes leaves the old or the new array.
Other changes are refused with an errno, the frame unchanged."""

import errno
import json
import os
import random
import signal
import subprocess
import sys
import time

import blosc2
import numpy as np
import xarray as xr
import zarr

from harness import PATIENCE, Harness, TestFailure, check, check_equal, stop_process
from writes import check_untouched, chunk_numbers, stored_chunks

rng = np.random.default_rng(20261127)


def write(folder, name, a, chunks, blocks, **kwargs):
    path = os.path.join(folder, name)
    blosc2.asarray(a, urlpath=path, mode="w", chunks=chunks, blocks=blocks, **kwargs)
    return path


def region_write(h, k, blocks, sharded, what):
    """zarr-python writes a region across four chunks and sets attributes: a
    100k x 90k float64 array of 40k x 30k chunks."""
    folder = h.new_dir("arrays")
    shape, chunks = (100 * k, 90 * k), (40 * k, 30 * k)
    a = rng.normal(0, 10, shape)
    path = write(folder, "a.b2nd", a, chunks, blocks)
    arr = blosc2.open(path, mode="a")
    arr.vlmeta["kept"] = "as it was"
    del arr
    before = stored_chunks(h, path)
    region = (slice(30 * k, 50 * k), slice(20 * k, 40 * k))
    new = rng.normal(100, 1, (20 * k, 20 * k))
    mnt = h.mount(path)
    try:
        z = zarr.open_array(mnt, mode="r+")
        check_equal(z.shards is not None, sharded, f"{what}: the view is sharded")
        z[region] = new
        z.attrs["units"] = "K"
        z.attrs.update({"scale": 0.5, "bands": [1, 2]})
        check_equal(z.attrs["units"], "K", f"{what}: the attribute read back on the mount")
        z2 = zarr.open_array(mnt, mode="r")
        want = a.copy()
        want[region] = new
        check(np.array_equal(z2[...], want), f"{what}: zarr-python reads its write back")
        # A chunk holding only the fill value: zarr-python removes its key.
        z[80 * k:100 * k, 60 * k:90 * k] = 0
        want[80 * k:100 * k, 60 * k:90 * k] = 0
        z[0:40 * k, 60 * k:90 * k] = 0
        want[0:40 * k, 60 * k:90 * k] = 0
        left = sorted(os.listdir(os.path.join(mnt, "c", "0")))
        check_equal(left, ["0", "1", "2"], f"{what}: c/0 after the writes (no temporary file left)")
    finally:
        h.unmount(mnt)
    arr = blosc2.open(path)
    check(np.array_equal(arr[:], want), f"{what}: python-blosc2 reads the written region")
    check_equal(arr.vlmeta["units"], "K", f"{what}: attribute units")
    check_equal(arr.vlmeta["scale"], 0.5, f"{what}: attribute scale")
    check_equal(list(arr.vlmeta["bands"]), [1, 2], f"{what}: attribute bands")
    check_equal(arr.vlmeta["kept"], "as it was", f"{what}: an attribute not written")
    written = chunk_numbers(shape, chunks, region) | {2, 8}
    check_equal(chunk_numbers(shape, chunks, region), {3, 4, 0, 1}, f"{what}: the region spans four chunks")
    check_untouched(before, stored_chunks(h, path), written, what)


def sharded_region_write(h):
    # Chunks of 480 x 360 float64 (1.3 MB, at least the 1 MiB a shard needs), blocks 240 x 120.
    region_write(h, 12, (240, 120), True, "sharded view")


def runs_region_write(h):
    # Chunks of 480 x 360 float64 in blocks of 60 whole rows (172.8 KB): the shard's
    # inner chunks are runs of 4 blocks (240 x 360, 691 KB), 2 to a shard.
    region_write(h, 12, (60, 360), True, "sharded view, inner chunks of runs of blocks")


def plain_region_write(h):
    # Chunks of 40 x 30 float64 (9.6 KB), not multiples of the blocks.
    region_write(h, 1, (16, 7), False, "plain view")


def small_chunks_region_write(h):
    # Chunks of 40 x 30 float64 that are multiples of the blocks, but under 1 MiB: plain.
    region_write(h, 1, (20, 10), False, "plain view of small chunks of whole blocks")


def odd_arrays(h):
    """0-d (the file c beside zarr.json), 1-d (temporary files in c/), 3-d
    big-endian, bool: zarr-python writes, python-blosc2 reads."""
    folder = h.new_dir("odd")
    cases = [("zero-d.b2nd", np.array(5.0), None, None, ()),
             ("one-d.b2nd", np.arange(1000, dtype="i4"), (256,), (64,), (slice(200, 600),)),
             ("three-d-be.b2nd", np.arange(7200, dtype=">f8").reshape(24, 30, 10), (8, 16, 10), (4, 8, 5),
              (slice(5, 20), slice(3, 25), 2)),
             ("bool.b2nd", np.zeros((50, 50), bool), (20, 20), (10, 10), (slice(None), 7))]
    for name, a, chunks, blocks, region in cases:
        path = os.path.join(folder, name)
        extra = {} if chunks is None else {"chunks": chunks, "blocks": blocks}
        blosc2.asarray(a, urlpath=path, mode="w", **extra)
        want = a.copy()
        want[region] = True if a.dtype == bool else 7
        mnt = h.mount(path)
        try:
            z = zarr.open_array(mnt, mode="r+")
            z[region] = True if a.dtype == bool else 7
        finally:
            h.unmount(mnt)
        arr = blosc2.open(path)
        got = arr[()] if arr.ndim == 0 else arr[:]
        check(np.array_equal(got, want), f"{name}: python-blosc2 reads zarr-python's write")
        check_equal(got.dtype, a.dtype, f"{name}: dtype")


def xarray_region_write(h):
    """xarray to_zarr(region=...) into a folder of arrays mounted read-write."""
    folder = h.new_dir("dataset")
    t = rng.normal(15, 5, (60, 80)).astype("f4")
    p = rng.normal(1000, 5, (60, 80))
    tpath = write(folder, "t.b2nd", t, (20, 20), (10, 10))
    ppath = write(folder, "p.b2nd", p, (20, 20), (10, 10))
    before_t, before_p = stored_chunks(h, tpath), stored_chunks(h, ppath)
    mnt = h.mount(folder)
    try:
        ds = xr.open_zarr(mnt, consolidated=False, chunks=None)
        dims = ds["t.b2nd"].dims
        update = xr.Dataset({"t.b2nd": (dims, np.full((30, 30), -1, "f4"))})
        update.to_zarr(mnt, region={dims[0]: slice(10, 40), dims[1]: slice(10, 40)}, consolidated=False)
        back = xr.open_zarr(mnt, consolidated=False, chunks=None)["t.b2nd"].values
    finally:
        h.unmount(mnt)
    want = t.copy()
    want[10:40, 10:40] = -1
    check(np.array_equal(back, want), "xarray reads its region write back on the mount")
    check(np.array_equal(blosc2.open(tpath)[:], want), "python-blosc2 reads xarray's region write")
    check(np.array_equal(blosc2.open(ppath)[:], p), "the other variable is unchanged")
    written = chunk_numbers((60, 80), (20, 20), (slice(10, 40), slice(10, 40)))
    check_untouched(before_t, stored_chunks(h, tpath), written, "xarray region write")
    check_untouched(before_p, stored_chunks(h, ppath), set(), "the other variable")


# Runs in its own process: whole-array writes of value i through zarr-python
# until the mount goes away, logging each once zarr-python returned.
WRITE_LOOP = r"""
import sys, numpy as np, zarr
mnt, log_path = sys.argv[1], sys.argv[2]
log = open(log_path, "a", buffering=1)
z = zarr.open_array(mnt, mode="r+")
i = 1
try:
    while True:
        z[...] = np.full(z.shape, i, z.dtype)
        log.write("%d\n" % i)
        i += 1
except Exception:
    pass
"""


def kill_during_writes(h):
    """SIGKILL of the daemon while zarr-python rewrites a one-chunk array (even
    rounds: a 1 MiB shard of 16 blocks; odd rounds: a plain 32 KB chunk): the
    frame opens and holds one value throughout."""
    rounds = 6
    choose = random.Random(20261127)
    for number in range(rounds):
        folder = h.new_dir("kill")
        if number % 2 == 0:
            path = write(folder, "k.b2nd", np.zeros((512, 256), "i8"), (512, 256), (128, 64))
        else:
            path = write(folder, "k.b2nd", np.zeros((64, 64), "i8"), (64, 64), (16, 16))
        mnt = h.new_dir()
        log_path = os.path.join(h.workdir, f"zarr-writes{number}.log")
        open(log_path, "w").close()
        daemon_log = open(os.path.join(h.workdir, f"zarr-daemon{number}.log"), "w")
        daemon = h.start_foreground([path], mnt, stderr=daemon_log, what=f"round {number}: the mount")
        writer = None
        try:
            writer = subprocess.Popen([sys.executable, "-c", WRITE_LOOP, mnt, log_path],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            # Once zarr-python writes (its import takes a while), at a random moment.
            deadline = time.time() + PATIENCE
            while os.path.getsize(log_path) == 0 and time.time() < deadline and writer.poll() is None:
                time.sleep(0.01)
            check(os.path.getsize(log_path) > 0, f"round {number}: zarr-python wrote nothing")
            time.sleep(choose.uniform(0.0, 0.4))
            daemon.send_signal(signal.SIGKILL)
            h.wait_killed(daemon, mnt, f"round {number}")
        finally:
            stop_process(daemon)
            # The writer goes before the mount point is detached: it would
            # otherwise go on writing into the bare directory beneath.
            if writer is not None:
                writer.kill()
                writer.wait(timeout=30)
            h.detach(mnt)
            daemon_log.close()
        with open(log_path) as f:
            done = max([int(line) for line in f if line.strip()] or [0])
        values = np.unique(blosc2.open(path)[:])
        what = f"round {number} (writes done: {done})"
        check_equal(len(values), 1, f"{what}: one value throughout, not {values[:5]}")
        check(int(values[0]) in (done, done + 1), f"{what}: holds {values[0]}")
    print(f"  {rounds} rounds", flush=True)


def expect_errno(want, action, what):
    try:
        action()
    except OSError as e:
        check_equal(errno.errorcode.get(e.errno), errno.errorcode[want], what)
        return
    raise TestFailure(f"{what}: succeeded, {errno.errorcode[want]} expected")


def put(directory, name, data):
    """What zarr-python's LocalStore does: a temporary file renamed over the key."""
    tmp = os.path.join(directory, name + ".0123456789abcdef0123456789abcdef.partial")
    with open(tmp, "wb") as f:
        f.write(data)
    try:
        os.replace(tmp, os.path.join(directory, name))
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def refusals(h):
    folder = h.new_dir("refuse")
    # Chunks of 512 x 512 int32 (1 MiB): shards, whose index can lie.
    a = rng.integers(0, 100, (1024, 1024)).astype("i4")
    path = write(folder, "r.b2nd", a, (512, 512), (128, 128))
    arr = blosc2.open(path, mode="a")
    arr.vlmeta["units"] = "m"
    del arr
    frame = open(path, "rb").read()
    mnt = h.mount(path)
    try:
        meta = json.load(open(os.path.join(mnt, "zarr.json")))
        reshaped = dict(meta, shape=[80, 40])
        expect_errno(errno.EPERM, lambda: put(mnt, "zarr.json", json.dumps(reshaped).encode()),
                     "zarr.json with another shape")
        retyped = dict(meta, data_type="float32")
        expect_errno(errno.EPERM, lambda: put(mnt, "zarr.json", json.dumps(retyped).encode()),
                     "zarr.json with another data type")
        expect_errno(errno.EPERM, lambda: put(mnt, "zarr.json", b"{not json"),
                     "zarr.json that is not JSON")
        check_equal(meta["codecs"][0]["name"], "sharding_indexed", "r.b2nd's view")
        shard = open(os.path.join(mnt, "c", "0", "0"), "rb").read()
        expect_errno(errno.EINVAL, lambda: put(os.path.join(mnt, "c", "0"), "0", shard[:-5]),
                     "a shard cut short")
        lying = bytearray(shard)
        lying[-16:-8] = (len(shard)).to_bytes(8, "little")  # the last block's offset past the end
        expect_errno(errno.EINVAL, lambda: put(os.path.join(mnt, "c", "0"), "0", bytes(lying)),
                     "a shard index pointing outside the file")
        expect_errno(errno.EACCES, lambda: open(os.path.join(mnt, "c", "0", "0"), "r+b"),
                     "a chunk file opened for writing in place")
        expect_errno(errno.EPERM, lambda: put(os.path.join(mnt, "c", "0"), "5", shard),
                     "a key outside the grid")
        expect_errno(errno.EPERM, lambda: put(os.path.join(mnt, "zarr2"), "0.0", b"x"),
                     "the v2 view")
        expect_errno(errno.EPERM, lambda: open(os.path.join(mnt, "zarr2", ".scratch"), "wb"),
                     "an editor's scratch name in the v2 view")
        expect_errno(errno.EPERM, lambda: os.unlink(os.path.join(mnt, "zarr2", "0.0")), "removing a v2 chunk")
        check_equal(sorted(os.listdir(os.path.join(mnt, "zarr2")))[:3], [".zarray", ".zattrs", "0.0"],
                    "zarr2/ after the refusals")
        expect_errno(errno.EPERM, lambda: os.unlink(os.path.join(mnt, "zarr.json")), "removing zarr.json")
        check_equal(sorted(os.listdir(os.path.join(mnt, "c", "0"))), ["0", "1"], "c/0 after the refusals")
    finally:
        h.unmount(mnt)
    check(open(path, "rb").read() == frame, "the frame is unchanged after the refusals")
    mnt = h.mount(path, ["-o", "ro"])
    try:
        expect_errno(errno.EROFS, lambda: put(os.path.join(mnt, "c", "0"), "0", b""), "a read-only mount")
        expect_errno(errno.EROFS, lambda: os.unlink(os.path.join(mnt, "c", "0", "0")), "a read-only mount: unlink")
        z = zarr.open_array(mnt, mode="r+")
        try:
            z[0:5, 0:5] = 1
        except OSError as e:
            check_equal(errno.errorcode.get(e.errno), "EROFS", "zarr-python on a read-only mount")
        else:
            raise TestFailure("zarr-python wrote to a read-only mount")
    finally:
        h.unmount(mnt)
    check(open(path, "rb").read() == frame, "the frame is unchanged after the read-only mount")


def main():
    h = Harness("Zarr view writes", watchdog_seconds=600)
    h.require_fuse()
    h.test("zarr-python: a region of four chunks and attributes (sharded view)", sharded_region_write, h)
    h.test("zarr-python: a region of four chunks and attributes (shard of runs of blocks)", runs_region_write, h)
    h.test("zarr-python: a region of four chunks and attributes (plain view)", plain_region_write, h)
    h.test("zarr-python: a region of four chunks and attributes (plain view, small chunks of whole blocks)",
           small_chunks_region_write, h)
    h.test("zarr-python: 0-d, 1-d, 3-d big-endian and bool arrays", odd_arrays, h)
    h.test("xarray: to_zarr(region=...) into a folder", xarray_region_write, h)
    h.test("SIGKILL during zarr-python chunk writes: old or new array", kill_during_writes, h)
    h.test("refused: other zarr.json changes, bad shards, zarr2/, read-only", refusals, h)
    h.finish()


if __name__ == "__main__":
    main()
