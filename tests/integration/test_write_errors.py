"""Writes that cannot be stored: the errno comes from write() or close() (or
create/rename/unlink), one log line names the file, and the frame stays as it
was: invalid JSON in attrs/, wrong metalayer lengths, bad raw chunks, chunks
over the chunksize, read-only mounts, the 16-vlmetalayer and 31-byte limits,
a full disk."""

import errno
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness, check, check_equal, read_file, wait_until  # noqa: E402
from writes import expect_errno, expect_state, file_bytes, frame_state, sh, write_errno  # noqa: E402

CONTIGUOUS, SPARSE, NDIM, SIXTEEN = ("metas-vlmetas.b2frame", "sframe-zstd-f4.b2frame", "b2nd-3d-f8.b2nd",
                                     "many-vlmetas.b2frame")


def unchanged(h, frame, original, before, what):
    check(file_bytes(frame) == original, f"{what}: the frame's bytes changed")
    expect_state(before, frame_state(h, frame), what=what)


def invalid_json(h, name):
    frame = h.copy_fixture(name)
    original, before = file_bytes(frame), frame_state(h, frame)
    mnt = h.mount(frame)
    attrs = os.path.join(mnt, "attrs")
    target = os.path.join(attrs, sorted(os.listdir(attrs))[0]) if os.listdir(attrs) else os.path.join(attrs, "x")
    text_before = read_file(target) if os.path.exists(target) else None
    # The write after which the text can no longer be JSON fails.
    check_equal(write_errno(target, [b'{"a": [1, ', b'2]', b'}}']), ("write 2", errno.EINVAL), "a stray }")
    check_equal(write_errno(target, [b"not json"]), ("write 0", errno.EINVAL), "text that is no JSON")
    # A valid beginning that never ends fails at close.
    check_equal(write_errno(target, [b'{"a": [1, 2']), ("close", errno.EINVAL), "unfinished JSON")
    check_equal(write_errno(os.path.join(attrs, "new"), [b"[1,"]), ("close", errno.EINVAL), "unfinished, new")
    # An editor's scratch file renamed over it is checked the same way. A NUL byte
    # ends the text for the JSON parser, which would silently drop what follows.
    scratch = os.path.join(attrs, ".edit.swp")
    with open(scratch, "wb") as f:
        f.write(b'{"a": 1}\0and more')
    expect_errno("JSON and a NUL byte renamed over an attrs file", lambda: os.rename(scratch, target), errno.EINVAL)
    os.unlink(scratch)
    # The shell sees the write error.
    r = sh("echo '{bad' > attrs/shell", cwd=mnt, expect_ok=False)
    check(r.returncode != 0 and "Invalid argument" in r.stderr, f"echo of bad JSON: {r.returncode} {r.stderr!r}")
    if text_before is not None:
        check_equal(read_file(target), text_before, "the attrs file after refused writes")
    listing = os.listdir(attrs)
    check("new" not in listing and "shell" not in listing, f"refused files are listed: {listing}")
    h.unmount(mnt)
    unchanged(h, frame, original, before, "invalid JSON")


def wrong_lengths(h):
    frame = h.copy_fixture(CONTIGUOUS)
    original, before = file_bytes(frame), frame_state(h, frame)
    mnt = h.mount(frame)
    note = os.path.join(mnt, "meta", "note")
    length = len(before["meta"]["note"])
    stage, err = write_errno(note, [b"x" * (length + 1)], os.O_WRONLY)
    check_equal((stage, err), ("write 0", errno.EINVAL), "a metalayer write past its length")
    check_equal(write_errno(note, [b"short"]), ("close", errno.EINVAL), "a shorter metalayer")
    expect_errno("creating a new metalayer", lambda: open(os.path.join(mnt, "meta", "newmeta"), "wb"), errno.EPERM)
    expect_errno("removing a metalayer", lambda: os.unlink(note), errno.EPERM)
    # chunks: not past the chunksize, middle chunks keep it, only the last goes
    chunk = os.path.join(mnt, "chunks", "00000000")
    size = os.stat(chunk).st_size
    check_equal(write_errno(chunk, [b"y" * (size + 1)], os.O_WRONLY), ("write 0", errno.EFBIG), "past the chunksize")
    check_equal(write_errno(chunk, [b"y" * 10]), ("close", errno.EINVAL), "a short middle chunk")
    expect_errno("removing a middle chunk", lambda: os.unlink(chunk), errno.EPERM)
    expect_errno("writing frame.json", lambda: open(os.path.join(mnt, "frame.json"), "wb"), errno.EACCES)
    expect_errno("mkdir", lambda: os.mkdir(os.path.join(mnt, "vlmeta", "d")), errno.EPERM)
    expect_errno("moving across directories", lambda: os.rename(os.path.join(mnt, "vlmeta", "author"),
                                                               os.path.join(mnt, "attrs", "author2")), errno.EXDEV)
    check_equal(write_errno(os.path.join(mnt, "raw", "00000001.chunk"), [b"\x02\x01" + b"\0" * 40]),
                ("close", errno.EINVAL), "a raw chunk that is no chunk")
    h.unmount(mnt)
    unchanged(h, frame, original, before, "wrong lengths")


def bad_b2nd_meta(h):
    frame = h.copy_fixture(NDIM)
    original, before = file_bytes(frame), frame_state(h, frame)
    mnt = h.mount(frame)
    b2nd = os.path.join(mnt, "meta", "b2nd")
    check_equal(write_errno(b2nd, [b"\xff" * len(before["meta"]["b2nd"])]), ("close", errno.EINVAL),
                "a b2nd metalayer that does not decode")
    h.unmount(mnt)
    unchanged(h, frame, original, before, "bad b2nd metalayer")


def read_only(h):
    frame = h.copy_fixture(CONTIGUOUS)
    original = file_bytes(frame)
    mnt = h.mount(frame, ["-o", "ro"])
    vl = os.path.join(mnt, "vlmeta")
    attempts = [
        ("open data for writing", lambda: open(os.path.join(mnt, "data"), "r+b")),
        ("create", lambda: open(os.path.join(vl, "new"), "wb")),
        ("create a scratch file", lambda: open(os.path.join(vl, ".new.swp"), "wb")),
        ("unlink", lambda: os.unlink(os.path.join(vl, "author"))),
        ("rename", lambda: os.rename(os.path.join(vl, "author"), os.path.join(vl, "x"))),
        ("truncate", lambda: os.truncate(os.path.join(mnt, "data"), 0)),
        ("mkdir", lambda: os.mkdir(os.path.join(mnt, "d"))),
    ]
    for what, attempt in attempts:
        expect_errno(what, attempt, errno.EROFS)
    check_equal(os.stat(os.path.join(mnt, "data")).st_mode & 0o777, 0o444, "file mode on a read-only mount")
    check(os.statvfs(mnt).f_flag & os.ST_RDONLY, "statvfs does not say read-only")
    h.unmount(mnt)
    check(file_bytes(frame) == original, "a read-only mount changed the frame")
    mnt = h.mount(frame)
    check_equal(os.stat(os.path.join(mnt, "data")).st_mode & 0o777, 0o644, "file mode on a read-write mount")
    check_equal(os.stat(os.path.join(mnt, "frame.json")).st_mode & 0o777, 0o444, "frame.json stays read-only")


def not_writable(h):
    """A frame this user may not write (here: on a read-only bind mount) mounts
    read-only by default, with a notice."""
    frame = h.copy_fixture(CONTIGUOUS)
    ro_dir = h.new_dir("robind")
    try:
        h.mount_plain(["--bind", os.path.dirname(frame), ro_dir], ro_dir)
        h.mount_plain(["-o", "remount,ro,bind", ro_dir], ro_dir)
        mnt = h.new_dir()
        r = h.run([os.path.join(ro_dir, os.path.basename(frame)), mnt])
        check_equal(r.returncode, 0, f"mount status ({r.stderr.strip()})")
        h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
        check("read-only" in r.stderr, f"no notice about the read-only mount: {r.stderr!r}")
        check_equal(os.stat(os.path.join(mnt, "data")).st_mode & 0o777, 0o444, "file mode")
        expect_errno("writing", lambda: open(os.path.join(mnt, "vlmeta", "x"), "wb"), errno.EROFS)
        h.unmount(mnt)
    finally:
        h.unmount_all()  # the blosc2fs mount, then the bind mount under it


def layer_limits(h):
    frame = h.copy_fixture(SIXTEEN)
    original, before = file_bytes(frame), frame_state(h, frame)
    mnt = h.mount(frame)
    vl = os.path.join(mnt, "vlmeta")
    expect_errno("a 17th vlmetalayer", lambda: open(os.path.join(vl, "key16"), "wb"), errno.ENOSPC)
    expect_errno("a 17th through attrs/", lambda: open(os.path.join(mnt, "attrs", "key16"), "w"), errno.ENOSPC)
    first = sorted(before["vlmeta"])[0]
    expect_errno("renaming onto a 32-byte name", lambda: os.rename(os.path.join(vl, first), os.path.join(vl, "n" * 32)),
                 errno.ENAMETOOLONG)
    h.unmount(mnt)
    unchanged(h, frame, original, before, "layer limits")
    frame = h.copy_fixture(CONTIGUOUS)
    mnt = h.mount(frame)
    expect_errno("a 32-byte name", lambda: open(os.path.join(mnt, "vlmeta", "n" * 32), "wb"), errno.ENAMETOOLONG)
    with open(os.path.join(mnt, "vlmeta", "n" * 31), "wb") as f:
        f.write(b"31 bytes are fine")
    # python-blosc2 reads every vlmetalayer name as UTF-8: bytes that are not are refused.
    raw_vl = os.fsencode(os.path.join(mnt, "vlmeta"))
    expect_errno("a name that is not UTF-8", lambda: open(raw_vl + b"/\xff", "wb"), errno.EINVAL)
    expect_errno("renaming onto a name that is not UTF-8",
                 lambda: os.rename(raw_vl + b"/" + b"n" * 31, raw_vl + b"/ab\xc3"), errno.EINVAL)
    with open(raw_vl + "/é".encode(), "wb") as f:
        f.write(b"UTF-8 is fine")
    check_equal(read_file(os.path.join(mnt, "vlmeta", "n" * 31)), b"31 bytes are fine", "a 31-byte name")


def full_disk(h, name):
    small = h.new_dir("tmpfs")
    h.mount_plain(["-t", "tmpfs", "-o", "size=1m", "tmpfs", small], small)
    try:
        frame = h.copy_fixture(name, small)
        before = frame_state(h, frame)
        mnt = h.mount(frame)
        check_equal(write_errno(os.path.join(mnt, "data"), [os.urandom(1 << 20)] * 3, os.O_WRONLY | os.O_APPEND),
                    ("close", errno.ENOSPC), "appending 3 MiB to data on a 1 MiB file system")
        check_equal(write_errno(os.path.join(mnt, "vlmeta", "big"), [os.urandom(2 << 20)]),
                    ("close", errno.ENOSPC), "a 2 MiB vlmetalayer on a 1 MiB file system")
        check_equal(os.stat(os.path.join(mnt, "data")).st_size, len(before["data"]), "data size after ENOSPC")
        h.unmount(mnt)
        # Bytes a failed commit appended past the frame's end may stay (no
        # reader looks there; the next commit writes over them).
        expect_state(before, frame_state(h, frame), what="full disk")
        # The space the failed commits took is given back: a small edit works.
        mnt = h.mount(frame)
        sh("echo small > vlmeta/small", cwd=mnt)
        h.unmount(mnt)
        expect_state(before, frame_state(h, frame), vlmeta={"small": b"small\n"}, what="after a full disk")
    finally:
        h.unmount_all()  # the blosc2fs mount, then the tmpfs under it


def one_log_line(h):
    """In the foreground, a refused commit logs one error line naming the file."""
    frame = h.copy_fixture(CONTIGUOUS)
    mnt = h.new_dir()
    log_path = os.path.join(h.workdir, "foreground.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([h.binary, "-f", frame, mnt], stdout=subprocess.DEVNULL, stderr=log,
                                stdin=subprocess.DEVNULL)
    try:
        check(wait_until(lambda: os.path.ismount(mnt) or proc.poll() is not None) and os.path.ismount(mnt),
              f"the foreground mount did not appear (daemon status {proc.poll()})")
        h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
        check_equal(write_errno(os.path.join(mnt, "meta", "note"), [b"abc"]), ("close", errno.EINVAL), "short meta")
        h.unmount(mnt)
        check_equal(proc.wait(timeout=30), 0, "exit status after unmounting")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    errors = [line for line in open(log_path).read().splitlines() if " error: " in line]
    check_equal(len(errors), 1, f"error lines for one refused commit: {errors}")
    check("meta/note" in errors[0] and "21 bytes" in errors[0], f"the line names the file and why: {errors[0]}")


def main():
    h = Harness("writes that cannot be stored", watchdog_seconds=180)
    h.require_fuse()
    for name in (CONTIGUOUS, SPARSE, NDIM):
        h.test(f"invalid JSON: EINVAL at write() or close(), frame unchanged ({name})", invalid_json, h, name)
    h.test("wrong sizes: meta, chunks, raw chunks; EPERM, EACCES, EXDEV", wrong_lengths, h)
    h.test("a b2nd metalayer that would not decode", bad_b2nd_meta, h)
    h.test("-o ro: EROFS everywhere, read-only modes", read_only, h)
    h.test("a frame that may not be written mounts read-only with a notice", not_writable, h)
    h.test("16 vlmetalayers (ENOSPC), names over 31 bytes (ENAMETOOLONG)", layer_limits, h)
    for name in (CONTIGUOUS, SPARSE):
        h.test(f"a full disk: ENOSPC at close, the frame keeps its content ({name})", full_disk, h, name)
    h.test("one log line per refused commit", one_log_line, h)
    h.finish()


if __name__ == "__main__":
    main()
