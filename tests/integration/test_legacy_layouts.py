"""Frames of c-blosc2's pre-releases (legacy-layouts.md) through the mount and
--info: every one of fixtures-extra reads as its writer read it back (data,
chunks/, raw/, meta/, usermeta, frame.json, array.npy); the mount is read-only
with a notice, every write fails with EROFS; Lizard chunks read as EIO with a
log line naming the codec."""

import errno
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness, TestFailure, check, check_equal, gunzip, read_file  # noqa: E402

# Every frame of fixtures-extra in an older layout, with the layout frame.json names.
LEGACY = {
    "v2.0.0-beta.1-lz4-shuffle-f4.b2frame": "2.0.0-beta.1",
    "v2.0.0-beta.1-zstd-bitshuffle-f8-meta.b2frame": "2.0.0-beta.1",
    "v2.0.0-beta.2-zstd-bitshuffle-f8-meta-usermeta.b2frame": "2.0.0-beta.2",
    "v2.0.0.beta.5-lz4hc-shuffle-i8-usermeta.b2frame": "2.0.0-beta.3..5",
    "v2.0.0.beta.5-zlib-delta-shuffle-i4-meta.b2frame": "2.0.0-beta.3..5",
    "python-caterva-example.cat": "2.0.0-beta.3..5",
}


def extra_frame(h, name):
    return os.path.join(h.fixtures_extra, "frames", name)


def extra_expect(h, name):
    with open(os.path.join(h.fixtures_extra, "expect", name + ".expect.json")) as f:
        return json.load(f)


def writable_copy(h, name):
    """A copy this user may write: only the layout makes its mount read-only."""
    dst = os.path.join(h.new_dir("copy"), name)
    shutil.copyfile(extra_frame(h, name), dst)
    os.chmod(dst, 0o644)
    return dst


def expect_errno(what, action, want):
    try:
        action()
    except OSError as e:
        check_equal(e.errno, want, f"{what}: errno ({e})")
        return
    raise TestFailure(f"{what}: succeeded, expected errno {errno.errorcode[want]}")


def all_listed(h):
    """The list above is every frame of fixtures-extra whose header is not today's 14 elements."""
    for name in sorted(os.listdir(os.path.join(h.fixtures_extra, "frames"))):
        with open(extra_frame(h, name), "rb") as f:
            first = f.read(1)[0]
        check_equal(name in LEGACY, 0x9B <= first <= 0x9D, f"{name} (byte 0 = {first:#x}) listed")


def reads_exactly(h, name):
    expect = extra_expect(h, name)
    data = gunzip(os.path.join(h.fixtures_extra, "expect", name + ".data.gz"))
    frame = writable_copy(h, name)
    info = h.info(frame)
    check_equal(info["layout"], LEGACY[name], "--info layout")
    check_equal(info["splitmode"], None, "--info splitmode")
    check_equal(info["nchunks"], expect["nchunks"], "--info nchunks")
    check_equal(info["nbytes"], expect["nbytes"], "--info nbytes")
    mnt = h.mount(frame)
    tree = sorted(os.listdir(mnt))
    check_equal(json.loads(read_file(os.path.join(mnt, "frame.json"))), info, "frame.json is --info")
    whole = read_file(os.path.join(mnt, "data"))
    check_equal(len(whole), len(data), "data size")
    check(whole == data, "data differs from data.gz")
    offset = 0
    for n, chunk in enumerate(expect["chunks"]):
        got = read_file(os.path.join(mnt, "chunks", "%08d" % n))
        check(got == data[offset:offset + chunk["nbytes"]], f"chunks/{n:08d} differs")
        offset += chunk["nbytes"]
        raw = os.path.join(mnt, "raw", "%08d.chunk" % n)
        check_equal(os.stat(raw).st_size, chunk["cbytes"], f"raw/{n:08d}.chunk size")
    check_equal(sorted(os.listdir(os.path.join(mnt, "meta"))), sorted(expect["metalayers"]), "meta/")
    for meta, hexa in expect["metalayers"].items():
        check_equal(read_file(os.path.join(mnt, "meta", meta)).hex(), hexa, f"meta/{meta}")
    check_equal(os.listdir(os.path.join(mnt, "vlmeta")), [], "vlmeta/")
    if "usermeta" in expect:
        check("usermeta" in tree, f"no usermeta at the root: {tree}")
        path = os.path.join(mnt, "usermeta")
        check_equal(read_file(path).hex(), expect["usermeta"], "usermeta")
        check_equal(os.stat(path).st_size, len(expect["usermeta"]) // 2, "usermeta size")
        check_equal(os.stat(path).st_mode & 0o777, 0o444, "usermeta mode")
        check_equal(info["usermeta"]["size"], len(expect["usermeta"]) // 2, "frame.json usermeta size")
    else:
        check("usermeta" not in tree, f"usermeta shown for a frame without one: {tree}")
        check(not os.path.exists(os.path.join(mnt, "usermeta")), "usermeta exists")
        check_equal(info["usermeta"], None, "frame.json usermeta")
    rows = read_file(os.path.join(mnt, "index.tsv")).decode().splitlines()
    check_equal(len(rows), expect["nchunks"] + 1, "index.tsv rows")
    check("error" not in "\n".join(rows), "index.tsv has errors")
    if name == "python-caterva-example.cat":
        arr = np.load(os.path.join(mnt, "array.npy"))
        check_equal(arr.dtype, np.dtype("<f8"), "array.npy dtype (from the type metalayer)")
        check_equal(arr.shape, (1000, 1000), "array.npy shape")
        check_equal(info["array"]["npy_descr"], "<f8", "frame.json npy_descr")
        # The C-order array from the chunks' data, chunk grid 2 x 4 of 500 x 250
        # items, each stored as 600 x 300 (blocks of 200 x 100) in block order.
        items = np.frombuffer(data, dtype="<f8")
        want = np.empty((1000, 1000), dtype="<f8")
        for c in range(8):
            ci, cj = divmod(c, 4)
            chunk = items[c * 180000:(c + 1) * 180000].reshape(3, 3, 200, 100)
            full = chunk.transpose(0, 2, 1, 3).reshape(600, 300)
            want[ci * 500:(ci + 1) * 500, cj * 250:(cj + 1) * 250] = full[:500, :250]
        check(np.array_equal(arr, want), "array.npy differs from the chunks' data")
    else:
        check("array.npy" not in tree, f"array.npy for a frame without an N-d metalayer: {tree}")


def read_only(h, name):
    """Mounted read-write by default or with -o rw, an older layout falls back to
    read-only with a notice naming the layout; every write fails with EROFS."""
    frame = writable_copy(h, name)
    before = read_file(frame)
    for options in ([], ["-o", "rw"]):
        mnt = h.new_dir()
        r = h.run(options + [frame, mnt])
        check_equal(r.returncode, 0, f"mount status {options} ({r.stderr.strip()})")
        h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
        check("read-only" in r.stderr and LEGACY[name] in r.stderr,
              f"no notice naming the layout and read-only: {r.stderr!r}")
        check_equal(os.stat(os.path.join(mnt, "data")).st_mode & 0o777, 0o444, "data mode")
        expect_errno("echo > vlmeta/x", lambda: open(os.path.join(mnt, "vlmeta", "x"), "wb"), errno.EROFS)
        expect_errno("write to data", lambda: open(os.path.join(mnt, "data"), "r+b"), errno.EROFS)
        expect_errno("write to chunks/0", lambda: open(os.path.join(mnt, "chunks", "00000000"), "r+b"), errno.EROFS)
        expect_errno("truncate data", lambda: os.truncate(os.path.join(mnt, "data"), 0), errno.EROFS)
        expect_errno("touch a new file", lambda: open(os.path.join(mnt, "newfile"), "wb"), errno.EROFS)
        expect_errno("rm chunks/last", lambda: os.unlink(os.path.join(mnt, "chunks", os.listdir(
            os.path.join(mnt, "chunks"))[-1])), errno.EROFS)
        metas = os.listdir(os.path.join(mnt, "meta"))
        if metas:
            expect_errno("mv meta/", lambda: os.rename(os.path.join(mnt, "meta", metas[0]),
                                                       os.path.join(mnt, "meta", "renamed")), errno.EROFS)
        if os.path.exists(os.path.join(mnt, "usermeta")):
            expect_errno("write usermeta", lambda: open(os.path.join(mnt, "usermeta"), "r+b"), errno.EROFS)
        expect_errno("mkdir", lambda: os.mkdir(os.path.join(mnt, "vlmeta", "d")), errno.EROFS)
        h.unmount(mnt)
    check(read_file(frame) == before, "the frame changed")


def lizard(h):
    """A chunk of the Lizard codec (compformat 5) reads as EIO with one log line
    naming the codec; the other chunks still read."""
    name = "v2.0.0.beta.5-lz4hc-shuffle-i8-usermeta.b2frame"
    frame = writable_copy(h, name)
    with open(frame, "r+b") as f:
        head = f.read(16)
        header_len = int.from_bytes(head[11:15], "big")
        f.seek(header_len + 2)
        flags = f.read(1)[0]
        f.seek(header_len + 2)
        f.write(bytes([(flags & 0x1F) | (5 << 5)]))
    mnt = h.new_dir()
    log_path = os.path.join(h.workdir, "lizard.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([h.binary, "-f", "-o", "ro", frame, mnt], stdout=subprocess.DEVNULL, stderr=log,
                                stdin=subprocess.DEVNULL)
    try:
        for _ in range(400):
            if os.path.ismount(mnt):
                break
            subprocess.run(["sleep", "0.05"])
        check(os.path.ismount(mnt), "the foreground mount did not appear")
        h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
        expect_errno("reading chunks/00000000", lambda: read_file(os.path.join(mnt, "chunks", "00000000")), errno.EIO)
        data = gunzip(os.path.join(h.fixtures_extra, "expect", name + ".data.gz"))
        check(read_file(os.path.join(mnt, "chunks", "00000001")) == data[400000:800000], "chunk 1 still reads")
        rows = read_file(os.path.join(mnt, "index.tsv")).decode().splitlines()
        check(rows[1].split("\t")[5] == "lizard", f"index.tsv codec of chunk 0: {rows[1]!r}")
        h.unmount(mnt)
        check_equal(proc.wait(timeout=30), 0, "exit status after unmounting")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    lines = [line for line in open(log_path).read().splitlines() if "lizard" in line]
    check(len(lines) >= 1 and "chunk 0" in lines[0], f"log lines naming lizard: {lines}")


def main():
    h = Harness("older layouts: pre-2.0.0 frames", watchdog_seconds=240)
    h.require_fuse()
    h.test("every older frame of fixtures-extra is listed", all_listed, h)
    for name in LEGACY:
        h.test(f"reads exactly through --info and the mount ({name})", reads_exactly, h, name)
    for name in ("v2.0.0-beta.1-lz4-shuffle-f4.b2frame", "v2.0.0-beta.2-zstd-bitshuffle-f8-meta-usermeta.b2frame",
                 "v2.0.0.beta.5-zlib-delta-shuffle-i4-meta.b2frame"):
        h.test(f"read-only mount, EROFS on every write ({name})", read_only, h, name)
    h.test("a Lizard chunk reads as EIO with a log line naming the codec", lizard, h)
    h.finish()


if __name__ == "__main__":
    main()
