"""Another program changes the frame while it is mounted: a second blosc2fs
mount of the same frame writing through its own FrameEditor (under c-blosc2's
.b2lock protocol when the sidecar exists), and a plain file replacement. The
first mount notices and shows the new content, also where the kernel had
cached the old one (pages, sizes, listings). A file kept open across the
change reads the old version's bytes or EIO, never the new one's, while
fresh opens read the new version."""

import os
import shutil
import struct
import sys
import io
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (PATIENCE, Harness, TestFailure, check, check_equal, check_one_version,  # noqa: E402
                     read_across_change, read_file)
from writes import frame_state, sh  # noqa: E402

import blosc2  # noqa: E402
import numpy as np  # noqa: E402

CONTIGUOUS, SPARSE = "metas-vlmetas.b2frame", "sframe-zstd-f4.b2frame"


def warm(mnt):
    """Reads everything once so that the kernel caches pages, sizes and listings."""
    for root, dirs, files in os.walk(mnt):
        for f in files:
            read_file(os.path.join(root, f))
            os.stat(os.path.join(root, f))


def wait_for(condition, what, seconds=PATIENCE):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise TestFailure(f"not seen within {seconds}s: {what}")


def two_mounts(h, name, sidecar):
    frame = h.copy_fixture(name)
    lock = os.path.join(frame, ".b2lock") if os.path.isdir(frame) else frame + ".b2lock"
    if sidecar:
        with open(lock, "wb") as f:
            f.write(bytes(16))
    first = h.mount(frame)
    second = h.mount(frame)
    warm(first)
    data_size = os.stat(os.path.join(first, "data")).st_size
    chunk1 = read_file(os.path.join(first, "chunks", "00000001"))
    nchunks = len(os.listdir(os.path.join(first, "chunks")))

    # Written through the second mount...
    sh("echo 'from the other mount' > vlmeta/other && echo '{\"n\": 1}' > attrs/json", cwd=second)
    sh("dd if=/dev/zero of=chunks/00000001 bs=64 count=1 conv=notrunc status=none", cwd=second)
    extra = bytes(range(256)) * 200
    with open(os.path.join(second, "data"), "ab") as f:
        f.write(extra)

    # ... is seen through the first: at the next open, and by stat alone once
    # the mount has looked (at most a second later).
    wait_for(lambda: read_file(os.path.join(first, "vlmeta", "other")) == b"from the other mount\n"
             if os.path.exists(os.path.join(first, "vlmeta", "other")) else False, "vlmeta/other")
    check_equal(read_file(os.path.join(first, "attrs", "json")), b'{"n":1}\n', "attrs/json in the first mount")
    check("other" in os.listdir(os.path.join(first, "vlmeta")), "vlmeta/ listing of the first mount")
    wait_for(lambda: os.stat(os.path.join(first, "data")).st_size == data_size + len(extra), "the new data size")
    check_equal(read_file(os.path.join(first, "chunks", "00000001")), bytes(64) + chunk1[64:], "chunk 1")
    data = read_file(os.path.join(first, "data"))
    check(data.endswith(extra), "data read through the first mount lacks the appended bytes")
    wait_for(lambda: len(os.listdir(os.path.join(first, "chunks"))) > nchunks, "the new chunk names")
    frame_json = read_file(os.path.join(first, "frame.json")).decode()
    check(f'"nbytes": {data_size + len(extra)}' in frame_json, "frame.json of the first mount is stale")

    # And the other way round, with a removal.
    os.unlink(os.path.join(first, "vlmeta", "other"))
    wait_for(lambda: "other" not in os.listdir(os.path.join(second, "vlmeta")), "the removal in the second mount")
    if sidecar:
        with open(lock, "rb") as f:
            counter = struct.unpack("<Q", f.read(16)[8:16])[0]
        check(counter >= 5, f"the .b2lock counter is {counter}: the writes did not take the lock")
    h.unmount(first)
    h.unmount(second)
    state = frame_state(h, frame)
    check("other" not in state["vlmeta"] and "json" in state["vlmeta"], f"layers at the end: {sorted(state['vlmeta'])}")
    check(state["data"].endswith(extra), "the frame lacks the appended bytes")


def replaced_file(h):
    """A frame file replaced by another program (cp over it): a read-only mount shows the new frame."""
    frame = h.copy_fixture(CONTIGUOUS)
    other = h.frame("frame_simple-lz4.b2frame")
    mnt = h.mount(frame, ["-o", "ro"])
    warm(mnt)
    want = frame_state(h, other)
    tmp = frame + ".new"
    shutil.copyfile(other, tmp)
    os.rename(tmp, frame)
    wait_for(lambda: os.stat(os.path.join(mnt, "data")).st_size == len(want["data"]), "the replaced frame's size")
    check(read_file(os.path.join(mnt, "data")) == want["data"], "data of the replaced frame")
    check_equal(sorted(os.listdir(os.path.join(mnt, "vlmeta"))), sorted(want["vlmeta"]), "vlmeta/ listing")
    check_equal(sorted(os.listdir(os.path.join(mnt, "chunks"))), ["%08d" % i for i in range(len(want["chunks"]))],
                "chunks/ listing")


def open_across_replacement(h, name, options):
    """`name` (array.npy or data) kept open across a new frame renamed over the
    mounted one: the rest reads the old bytes or EIO; fresh opens read the new
    version meanwhile (uncached while the old file is open) and after."""
    frame = os.path.join(h.new_dir("replacing"), "a.b2nd")
    old = np.arange(200_000, dtype="i8")
    new = -old - 1  # differs everywhere, the same size

    def npy(a):
        buf = io.BytesIO()
        np.save(buf, a)
        return buf.getvalue()

    want = {"array.npy": (npy(old), npy(new)), "data": (old.tobytes(), new.tobytes())}[name]
    blosc2.asarray(old, urlpath=frame, chunks=(10_000,), mode="w")
    mnt = h.mount(frame, options)
    path = os.path.join(mnt, name)
    check_equal(read_file(path), want[0], f"{name} before")

    def replace():
        blosc2.asarray(new, urlpath=frame + ".new", chunks=(10_000,), mode="w")
        os.replace(frame + ".new", frame)

    got = read_across_change(path, replace, lambda: read_file(path) == want[1], name)
    check_one_version(got, want[0], want[1], f"{name} kept open across the replacement")
    check_equal(read_file(path), want[1], f"{name} after the old file closed")
    # Our own commits (vlmeta written through the mount) leave open files readable.
    if "ro" not in options:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.pread(fd, 1000, 0)
            sh("echo ours > vlmeta/ours", cwd=mnt)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # the next read asks the daemon
            got = os.pread(fd, 1 << 20, 0)
            check(got and want[1].startswith(got), f"{name} open across our own commit")
        finally:
            os.close(fd)
    h.unmount(mnt)


def main():
    h = Harness("another writer while mounted", watchdog_seconds=180)
    h.require_fuse()
    for name in (CONTIGUOUS, SPARSE):
        h.test(f"a second mount writes, the first shows it ({name})", two_mounts, h, name, False)
        h.test(f"the same under the .b2lock sidecar ({name})", two_mounts, h, name, True)
    h.test("a frame file replaced under a read-only mount", replaced_file, h)
    h.test("array.npy kept open across a replacement (read-only mount): old bytes or EIO", open_across_replacement,
           h, "array.npy", ["-o", "ro"])
    h.test("data kept open across a replacement (read-write mount): old bytes or EIO; our own commits keep it",
           open_across_replacement, h, "data", [])
    h.finish()


if __name__ == "__main__":
    main()
