"""Bad command lines, bad frames and bad mount points: every failure gives the
documented exit status and one line on stderr; damaged frames either refuse
to mount or mount with the damaged part reading EIO while the rest works;
nothing hangs. Also -V, -h, --info, -o create, fstab options, signals, and
that the mount refuses writes."""

import errno
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import PATIENCE, Harness, TestFailure, check, check_equal, gunzip, read_file  # noqa: E402

EXIT_USAGE, EXIT_FRAME_MISSING, EXIT_FRAME_INVALID, EXIT_MOUNTPOINT, EXIT_FUSE = 1, 2, 3, 4, 5

# Reads every file of a mounted tree in a separate process, so that a hang
# cannot stop the test; prints a JSON summary {path: size or "errno NAME"}.
WALKER = r"""
import errno, json, os, sys
out = {}
for root, dirs, files in os.walk(sys.argv[1]):
    for f in files:
        p = os.path.join(root, f)
        try:
            with open(p, "rb") as fh:
                out[os.path.relpath(p, sys.argv[1])] = len(fh.read())
        except OSError as e:
            out[os.path.relpath(p, sys.argv[1])] = "errno " + errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps(out))
"""


def walk_tree(mnt, timeout=120):
    r = subprocess.run([sys.executable, "-c", WALKER, mnt], capture_output=True, text=True, timeout=timeout)
    check_equal(r.returncode, 0, f"walking {mnt} ({r.stderr.strip()})")
    return json.loads(r.stdout)


def expect_failure(h, args, status, what):
    r = h.run(args, timeout=60)
    check_equal(r.returncode, status, f"exit status for {what} (stderr: {r.stderr.strip()!r})")
    lines = r.stderr.strip().splitlines()
    check_equal(len(lines), 1, f"stderr lines for {what}: {lines}")
    check(lines[0].startswith("blosc2fs: "), f"stderr for {what} does not start with 'blosc2fs: ': {lines[0]}")
    return lines[0]


def copy_fixture(h, name):
    src = h.frame(name)
    dst = os.path.join(h.new_dir("copy"), name)
    if os.path.isdir(src):
        shutil.copytree(src, dst)
    else:
        shutil.copyfile(src, dst)
    return dst


def header_len(frame_bytes):
    return int.from_bytes(frame_bytes[11:15], "big", signed=True)


def read_error(path):
    """The errno of reading path (0 when it reads)."""
    try:
        read_file(path)
        return 0
    except OSError as e:
        return e.errno


# --- command line ---

def version_and_help(h):
    r = h.run(["-V"])
    check_equal(r.returncode, 0, "-V status")
    check("blosc2fs" in r.stdout, f"-V output: {r.stdout!r}")
    for flag in ("-h", "--help"):
        r = h.run([flag])
        check_equal(r.returncode, 0, f"{flag} status")
        check("usage:" in r.stdout and ".blosc2fs-cache" in r.stdout, f"{flag} output lacks usage")


def usage_errors(h):
    mnt = h.new_dir()
    frame = h.frame("frame_simple-lz4.b2frame")
    expect_failure(h, [], EXIT_USAGE, "no arguments")
    expect_failure(h, [frame], EXIT_USAGE, "no mount point")
    expect_failure(h, [frame, mnt, "extra"], EXIT_USAGE, "three arguments")
    expect_failure(h, ["-x", frame, mnt], EXIT_USAGE, "unknown flag")
    line = expect_failure(h, ["-o", "frobnicate", frame, mnt], EXIT_USAGE, "unknown -o option")
    check("frobnicate" in line, f"the error does not name the option: {line}")
    for bad in ("cache_size=lots", "log_level=loud", "codec=snappy", "clevel=12", "umask=9"):
        expect_failure(h, ["-o", bad, frame, mnt], EXIT_USAGE, f"-o {bad}")
    check(not os.path.ismount(mnt), "a usage error mounted something")


def info(h):
    name = "b2nd-3d-f8.b2nd"
    r = h.run(["--info", h.frame(name)])
    check_equal(r.returncode, 0, f"--info status ({r.stderr.strip()})")
    doc = json.loads(r.stdout)
    expect = h.expect(name)
    for key in ("nchunks", "nbytes", "typesize"):
        check_equal(doc[key], expect[key], f"--info {key}")
    expect_failure(h, ["--info", os.path.join(h.workdir, "absent.b2frame")], EXIT_FRAME_MISSING, "--info missing")
    garbage = os.path.join(h.new_dir("garbage"), "g.b2frame")
    with open(garbage, "wb") as f:
        f.write(random.Random(1).randbytes(5000))
    expect_failure(h, ["--info", garbage], EXIT_FRAME_INVALID, "--info garbage")


# --- FRAME and MOUNTPOINT problems ---

def missing_frame(h):
    mnt = h.new_dir()
    line = expect_failure(h, [os.path.join(h.workdir, "no-such.b2frame"), mnt], EXIT_FRAME_MISSING, "missing FRAME")
    check("cannot mount" in line, f"unexpected message: {line}")
    check(not os.path.ismount(mnt), "mounted without a frame")


def bad_mountpoint(h):
    frame = h.frame("frame_simple-lz4.b2frame")
    expect_failure(h, [frame, os.path.join(h.workdir, "no-such-dir")], EXIT_MOUNTPOINT, "missing MOUNTPOINT")
    plain = os.path.join(h.new_dir("file"), "plain")
    with open(plain, "w") as f:
        f.write("x")
    expect_failure(h, [frame, plain], EXIT_MOUNTPOINT, "MOUNTPOINT is a file")
    # A dataset the mount would cover, or one that holds the mount point, would be
    # reached through the mount by the daemon itself: refused before mounting.
    sparse = copy_fixture(h, "sframe-zstd-f4.b2frame")
    line = expect_failure(h, [sparse, sparse], EXIT_MOUNTPOINT, "a sparse frame mounted on itself")
    check("itself" in line, f"unexpected message: {line}")
    inside = os.path.join(sparse, "mnt")
    os.mkdir(inside)
    expect_failure(h, [sparse, inside], EXIT_MOUNTPOINT, "a mount point inside the sparse frame")
    contiguous = copy_fixture(h, "frame_simple-lz4.b2frame")
    expect_failure(h, [contiguous, os.path.dirname(contiguous) + "/"], EXIT_MOUNTPOINT,
                   "a frame mounted on its own directory")
    collection = h.new_dir("collection")
    shutil.copyfile(frame, os.path.join(collection, "a.b2frame"))
    os.mkdir(os.path.join(collection, "mnt"))
    expect_failure(h, [collection, os.path.join(collection, "mnt")], EXIT_MOUNTPOINT,
                   "a mount point inside the folder it mounts")
    for place in (sparse, contiguous, collection, inside):
        check(not os.path.ismount(place), f"{place} was mounted")


def not_frames(h):
    d = h.new_dir("notframes")
    mnt = h.new_dir()
    cases = {"empty": b"", "garbage": random.Random(2).randbytes(4096), "text": b"hello world\n" * 100,
             "short-garbage": b"\x90" * 20}
    for label, content in cases.items():
        path = os.path.join(d, label)
        with open(path, "wb") as f:
            f.write(content)
        expect_failure(h, [path, mnt], EXIT_FRAME_INVALID, f"a {label} file")
    check(not os.path.ismount(mnt), "mounted a non-frame")
    # A directory that is neither a sparse frame nor a .b2d store is a collection
    # (docs/collections.md): an empty one mounts holding collection.json and its group zarr.json.
    empty_dir = os.path.join(d, "emptydir")
    os.makedirs(empty_dir)
    folder = h.mount(empty_dir, ["-o", "ro"])
    check_equal(sorted(os.listdir(folder)), ["collection.json", "zarr.json"], "an empty directory's collection")
    h.unmount(folder)


def truncated_frames(h):
    outcomes = []
    for name in ("frame_simple-zstd.b2frame", "b2nd-3d-f8.b2nd", "metas-vlmetas.b2frame"):
        original = open(h.frame(name), "rb").read()
        hl = header_len(original)
        n = len(original)
        cuts = sorted({0, 10, 50, 86, 87, hl - 1, hl, hl + 100, n // 2, n - 100, n - 30, n - 1})
        for cut in cuts:
            if not 0 <= cut < n:
                continue
            path = os.path.join(h.new_dir("trunc"), name)
            with open(path, "wb") as f:
                f.write(original[:cut])
            mnt = h.new_dir()
            r = h.run([path, mnt], timeout=60)
            if r.returncode == 0:
                h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
                walk_tree(mnt)  # anything may fail, nothing may hang
                h.unmount(mnt)
                outcomes.append((name, cut, "mounted"))
            else:
                check_equal(r.returncode, EXIT_FRAME_INVALID, f"status for {name} cut at {cut} ({r.stderr.strip()})")
                check_equal(len(r.stderr.strip().splitlines()), 1, f"stderr lines for {name} cut at {cut}")
                outcomes.append((name, cut, "refused"))
    refused = sum(1 for o in outcomes if o[2] == "refused")
    print(f"  truncated frames: {refused} refused, {len(outcomes) - refused} mounted", flush=True)
    check(refused > 0, "no truncated frame was refused")


def corrupt_chunk_tests(h):
    """One damaged chunk: it reads EIO, its stat works, everything else reads."""
    name = "codec-zstd-shuffle-f4.b2frame"
    expect = h.expect(name)
    data = gunzip(h.expect_file(name, ".data.gz"))
    chunks = expect["chunks"]
    starts = [sum(c["nbytes"] for c in chunks[:i]) for i in range(len(chunks))]

    def damaged(bad, mutate):
        path = copy_fixture(h, name)
        b = bytearray(open(path, "rb").read())
        at = header_len(b) + chunks[bad]["index_entry"]
        mutate(b, at)
        open(path, "wb").write(b)
        return path

    def check_damaged(path, bad, payload_only):
        mnt = h.mount(path)
        chunk = os.path.join(mnt, "chunks", "%08d" % bad)
        check_equal(os.stat(chunk).st_size, chunks[bad]["nbytes"], "stat size of the damaged chunk")
        check_equal(read_error(chunk), errno.EIO, "reading the damaged chunk")
        check_equal(read_error(chunk), errno.EIO, "reading the damaged chunk again")
        for i, c in enumerate(chunks):
            if i != bad:
                got = read_file(os.path.join(mnt, "chunks", "%08d" % i))
                check(got == data[starts[i]:starts[i] + c["nbytes"]], f"chunk {i} next to a damaged one")
        # data reads through the page cache: the pages the damaged chunk touches
        # fail, the others read (a short read would tell the kernel the file ends).
        before = starts[bad] // 4096 * 4096
        after = -(-(starts[bad] + chunks[bad]["nbytes"]) // 4096) * 4096
        fd = os.open(os.path.join(mnt, "data"), os.O_RDONLY)
        try:
            check(os.pread(fd, before, 0) == data[:before], "data before the damaged chunk")
            check(os.pread(fd, len(data), after) == data[after:], "data after the damaged chunk")
        finally:
            os.close(fd)
        check_equal(read_error(os.path.join(mnt, "data")), errno.EIO, "reading data through the damaged chunk")
        json.loads(read_file(os.path.join(mnt, "frame.json")))
        rows = read_file(os.path.join(mnt, "index.tsv")).decode().splitlines()
        check_equal(len(rows), len(chunks) + 1, "index.tsv rows")
        ls = subprocess.run(["ls", "-l", os.path.join(mnt, "chunks"), os.path.join(mnt, "raw")],
                            capture_output=True, text=True, timeout=60)
        check_equal(ls.returncode, 0, f"ls -l with a damaged chunk ({ls.stderr.strip()})")
        if payload_only:  # the stored bytes are still served as stored
            raw = read_file(os.path.join(mnt, "raw", "%08d.chunk" % bad))
            check_equal(len(raw), chunks[bad]["cbytes"], "raw size of the damaged chunk")
        h.unmount(mnt)

    # A block offset pointing far past the chunk: the block table is invalid.
    def bad_block_offset(b, at):
        b[at + 32:at + 36] = (0x7FFFFFF0).to_bytes(4, "little")
    check_damaged(damaged(2, bad_block_offset), 2, True)

    # The chunk header itself overwritten.
    def bad_header(b, at):
        b[at:at + 16] = b"\xff" * 16
    check_damaged(damaged(3, bad_header), 3, False)


def garbage_payload(h):
    """Garbage inside a compressed stream: EIO or bytes of the right length, no hang."""
    name = "codec-lz4-shuffle-f4.b2frame"
    expect = h.expect(name)
    path = copy_fixture(h, name)
    b = bytearray(open(path, "rb").read())
    c = expect["chunks"][1]
    at = header_len(b) + c["index_entry"] + c["cbytes"] // 2
    b[at:at + 200] = random.Random(3).randbytes(200)
    open(path, "wb").write(b)
    mnt = h.mount(path)
    result = walk_tree(mnt)
    got = result["chunks/00000001"]
    check(got == "errno EIO" or got == c["nbytes"], f"chunks/00000001 with a garbage payload: {got}")
    check_equal(result["chunks/00000000"], expect["chunks"][0]["nbytes"], "chunks/00000000 next to it")


def missing_sparse_chunk(h):
    name = "sframe-zstd-f4.b2frame"
    expect = h.expect(name)
    path = copy_fixture(h, name)
    entry = expect["chunks"][1]["index_entry"]
    os.remove(os.path.join(path, "%08X.chunk" % entry))
    mnt = h.mount(path)
    check_equal(read_error(os.path.join(mnt, "chunks", "00000001")), errno.EIO, "a chunk whose file is gone")
    check_equal(read_error(os.path.join(mnt, "chunks", "00000002")), 0, "its neighbour")
    result = walk_tree(mnt)
    check_equal(result["chunks/00000000"], expect["chunks"][0]["nbytes"], "chunks/00000000")


def one_log_line(h):
    """In the foreground, a damaged chunk gives one error line naming it; SIGTERM unmounts."""
    name = "codec-zstd-shuffle-f4.b2frame"
    expect = h.expect(name)
    path = copy_fixture(h, name)
    b = bytearray(open(path, "rb").read())
    at = header_len(b) + expect["chunks"][4]["index_entry"]
    b[at + 32:at + 36] = (0x7FFFFFF0).to_bytes(4, "little")
    open(path, "wb").write(b)
    mnt = h.new_dir()
    log_path = os.path.join(h.workdir, "foreground.log")
    # Type=notify services: READY=1 once mounted, STOPPING=1 at the end.
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    address = f"@blosc2fs-test-bad-input-{os.getpid()}"
    listener.bind("\0" + address[1:])
    listener.settimeout(PATIENCE)
    with open(log_path, "w") as log:
        proc = subprocess.Popen([h.binary, "-f", path, mnt], stdout=subprocess.DEVNULL, stderr=log,
                                stdin=subprocess.DEVNULL, env=dict(os.environ, NOTIFY_SOCKET=address))
    try:
        ready = listener.recv(4096).decode().split("\n")
        check("READY=1" in ready, f"no READY=1 on NOTIFY_SOCKET: {ready}")
        deadline = time.time() + PATIENCE
        while not os.path.ismount(mnt) and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        check(os.path.ismount(mnt), "the foreground mount did not appear")
        h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
        for _ in range(3):
            check_equal(read_error(os.path.join(mnt, "chunks", "00000004")), errno.EIO, "the damaged chunk")
        proc.send_signal(signal.SIGTERM)
        check_equal(proc.wait(timeout=30), 0, "exit status after SIGTERM")
        check(not os.path.ismount(mnt), "still mounted after SIGTERM")
        h.mounts.pop(mnt, None)
        stopping = listener.recv(4096).decode().split("\n")
        check("STOPPING=1" in stopping, f"no STOPPING=1 on NOTIFY_SOCKET: {stopping}")
    finally:
        listener.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    lines = open(log_path).read().splitlines()
    errors = [line for line in lines if " error: " in line]
    check_equal(len(errors), 1, f"error lines for three failed reads: {errors}")
    check("chunks/00000004" in errors[0] and "chunk 4" in errors[0], f"the error line names the chunk: {errors[0]}")
    check(any("hits=" in line and "misses=" in line for line in lines), "no cache statistics logged at exit")


# --- mount options ---

def create_option(h):
    d = h.new_dir("create")
    frame = os.path.join(d, "new.b2frame")
    mnt = h.mount(frame, ["-o", "create,codec=lz4,clevel=5,typesize=4,chunksize=64K"])
    check(os.path.isfile(frame), "-o create did not create the frame")
    check_equal(os.stat(os.path.join(mnt, "data")).st_size, 0, "data size of a new frame")
    check_equal(os.listdir(os.path.join(mnt, "chunks")), [], "chunks/ of a new frame")
    doc = json.loads(read_file(os.path.join(mnt, "frame.json")))
    check_equal(doc["nchunks"], 0, "nchunks of a new frame")
    check_equal(doc["typesize"], 4, "typesize of a new frame")
    h.unmount(mnt)
    sparse = os.path.join(d, "new-sparse")
    mnt = h.mount(sparse, ["-o", "create,sparse"])
    check(os.path.isdir(sparse), "-o create,sparse did not create a directory")
    check_equal(json.loads(read_file(os.path.join(mnt, "frame.json")))["frame_type"], "sparse", "frame type")
    # Parameters no chunk can be compressed with: refused before the frame is made.
    for params in ("filters=trunc_prec:99", "filters=trunc_prec:10,typesize=2"):
        unusable = os.path.join(d, "unusable.b2frame")
        line = expect_failure(h, [unusable, h.new_dir(), "-o", "create," + params], EXIT_USAGE, f"-o create,{params}")
        check("cannot create it with these parameters" in line, f"unexpected message: {line}")
        check(not os.path.exists(unusable), f"-o create,{params} made a frame")


def fstab_options(h):
    frame = h.frame("frame_simple-lz4.b2frame")
    mnt = h.mount(frame, ["-o", "rw,noauto,x-systemd.automount,_netdev,nofail,dev,suid,exec,defaults",
                          "-o", "nodev,nosuid,fsname=myframe,uid=1234,gid=4321,umask=027"])
    st = os.stat(os.path.join(mnt, "data"))
    check_equal((st.st_uid, st.st_gid), (1234, 4321), "owner from uid=/gid=")
    check_equal(st.st_mode & 0o777, 0o440, "mode with umask=027")
    check_equal(os.stat(mnt).st_mode & 0o777, 0o550, "directory mode with umask=027")
    with open("/proc/mounts") as f:
        line = next((l for l in f if l.split()[1] == mnt), "")
    check(line.startswith("myframe "), f"fsname= not applied: {line.strip()}")
    check(" fuse.blosc2fs " in line, f"type is not fuse.blosc2fs: {line.strip()}")
    check(",nodev" in line or "nodev," in line, f"nodev not applied: {line.strip()}")


def single_threaded_and_cache_size(h):
    name = "frame_simple-zstd.b2frame"
    mnt = h.mount(h.frame(name), ["-s", "-o", "cache_size=3M"])
    check(read_file(os.path.join(mnt, "data")) == gunzip(h.expect_file(name, ".data.gz")), "data with -s")
    stats = h.cache_stats(mnt)
    check_equal(int(stats["budget"]), 3 << 20, "cache budget from cache_size=3M")
    check(int(stats["bytes"]) <= 3 << 20, f"cache over its budget: {stats}")


def refuses_writes(h):
    mnt = h.mount(h.frame("metas-vlmetas.b2frame"), ["-o", "ro"])
    attempts = [
        ("open for writing", lambda: open(os.path.join(mnt, "data"), "r+b")),
        ("create", lambda: open(os.path.join(mnt, "vlmeta", "new"), "wb")),
        ("unlink", lambda: os.unlink(os.path.join(mnt, "vlmeta", "author"))),
        ("mkdir", lambda: os.mkdir(os.path.join(mnt, "newdir"))),
        ("rename", lambda: os.rename(os.path.join(mnt, "vlmeta", "author"), os.path.join(mnt, "vlmeta", "x"))),
        ("truncate", lambda: os.truncate(os.path.join(mnt, "data"), 0)),
        ("setxattr", lambda: os.setxattr(os.path.join(mnt, "data"), "user.x", b"1")),
    ]
    for what, attempt in attempts:
        try:
            attempt()
            raise TestFailure(f"{what} succeeded on a read-only mount")
        except OSError as e:
            check_equal(e.errno, errno.EROFS, f"errno of {what}")


def main():
    h = Harness("bad input")
    h.require_fuse()
    h.test("-V and -h", version_and_help, h)
    h.test("usage errors exit 1", usage_errors, h)
    h.test("--info", info, h)
    h.test("missing FRAME exits 2", missing_frame, h)
    h.test("bad MOUNTPOINT exits 4", bad_mountpoint, h)
    h.test("files that are not frames exit 3", not_frames, h)
    h.test("truncated frames: refused or readable, never hanging", truncated_frames, h)
    h.test("a damaged chunk reads EIO, the rest works", corrupt_chunk_tests, h)
    h.test("garbage inside a compressed stream", garbage_payload, h)
    h.test("a sparse frame missing a chunk file", missing_sparse_chunk, h)
    h.test("one log line per damaged chunk; NOTIFY_SOCKET; SIGTERM unmounts", one_log_line, h)
    h.test("-o create", create_option, h)
    h.test("fstab options, uid/gid/umask, fsname", fstab_options, h)
    h.test("-s and cache_size=", single_threaded_and_cache_size, h)
    h.test("writes fail with EROFS", refuses_writes, h)
    h.finish()


if __name__ == "__main__":
    main()
