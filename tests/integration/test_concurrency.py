"""Many reader processes at once: random ranges of data, chunks/N, raw/N.chunk
and array.npy of several mounts, with small cache budgets so that entries are
evicted while others read them; every byte compared with its expectation.
Also a frame of 200000 chunks (bench/mkframe many-chunks): listing, lookups and
parallel reads of its chunk files."""

import math
import multiprocessing
import os
import random
import signal
import struct
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness, TestFailure, check, check_equal, gunzip, read_file  # noqa: E402

NPROC = 10
OPS_PER_PROCESS = 400

# path -> expected bytes, or a callable(offset, length) -> bytes; set before the
# worker processes fork, so they inherit it.
EXPECTED = {}


def expected_range(path, offset, length):
    want = EXPECTED[path]
    if callable(want):
        return want(offset, length)
    return want[offset:offset + length]


def expected_size(path):
    want = EXPECTED[path]
    return want.size if callable(want) else len(want)


def worker(seed):
    """Random preads over all expected files; returns a list of problems."""
    rng = random.Random(seed)
    paths = sorted(EXPECTED)
    problems = []
    fds = {}
    try:
        for _ in range(OPS_PER_PROCESS):
            path = rng.choice(paths)
            if path not in fds or rng.random() < 0.1:  # reopen now and then
                if path in fds:
                    os.close(fds.pop(path))
                fds[path] = os.open(path, os.O_RDONLY)
            fd = fds[path]
            if rng.random() < 0.5:  # make the next read reach the daemon, not the page cache
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            size = expected_size(path)
            offset = rng.randrange(0, size + 1)
            length = rng.choice([1, 7, 4096, 65536 + 3, 1 << 20, rng.randrange(1, 300000)])
            got = bytearray()
            while len(got) < length:
                piece = os.pread(fd, length - len(got), offset + len(got))
                if not piece:
                    break
                got += piece
            want = expected_range(path, offset, length)
            if bytes(got) != want:
                problems.append(f"{path} [{offset}, +{length}): got {len(got)} bytes, "
                                f"want {len(want)}, first difference at "
                                f"{next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))}")
                if len(problems) > 5:
                    break
    except OSError as e:
        problems.append(f"{e}")
    finally:
        for fd in fds.values():
            os.close(fd)
    return problems


def default_signals():
    """pool.terminate() ends idle workers with SIGTERM. With the harness's
    handler inherited, a worker ran Python's exit path instead of dying, waited
    for the queue lock a sibling had died holding, and the pool's join hung."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def run_workers(h, seeds, timeout=600):
    ctx = multiprocessing.get_context("fork")
    pool = ctx.Pool(NPROC, initializer=default_signals)
    try:
        results = pool.map_async(worker, seeds).get(timeout=timeout)
    except multiprocessing.TimeoutError:
        raise TestFailure(f"the readers did not finish within {timeout}s")
    finally:
        pool.terminate()
        pool.join()
    problems = [p for r in results for p in r]
    check(not problems, f"{len(problems)} wrong reads, e.g. " + "; ".join(problems[:3]))


def cache_stats(mnt):
    text = read_file(os.path.join(mnt, ".blosc2fs-cache")).decode()
    return {k: int(v) for k, v in (kv.split("=") for kv in text.split())}


def add_fixture_expectations(h, name, mnt):
    expect = h.expect(name)
    data = bytearray(gunzip(h.expect_file(name, ".data.gz")))
    offset = 0
    for c in expect["chunks"]:
        if c["special"] == 4:  # uninitialized: no defined content; blosc2fs shows zeros
            data[offset:offset + c["nbytes"]] = bytes(c["nbytes"])
        offset += c["nbytes"]
    data = bytes(data)
    EXPECTED[os.path.join(mnt, "data")] = data
    offset = 0
    for i, c in enumerate(expect["chunks"]):
        EXPECTED[os.path.join(mnt, "chunks", "%08d" % i)] = data[offset:offset + c["nbytes"]]
        offset += c["nbytes"]
        raw_path = os.path.join(mnt, "raw", "%08d.chunk" % i)
        if i % 3 == 0:
            EXPECTED[raw_path] = read_file(raw_path)  # checked against the frame by test_fixture_trees
    array_gz = h.expect_file(name, ".array.gz")
    if os.path.exists(array_gz):
        array = gunzip(array_gz)
        npy = os.path.join(mnt, "array.npy")
        head = os.stat(npy).st_size - len(array)
        with open(npy, "rb") as f:
            header = f.read(head)
        check(header.startswith(b"\x93NUMPY"), f"{npy} does not start with the NPY magic")
        EXPECTED[npy] = header + array


def fixtures_in_parallel(h):
    EXPECTED.clear()
    names = ["frame_simple-zstd.b2frame", "frame_simple-lz4.b2frame", "b2nd-3d-f8.b2nd",
             "b2nd-4d-i2-sframe.b2nd", "example_item_prices.b2nd", "special-chunks-f4.b2frame",
             "sframe-mutated-i4.b2frame"]
    mounts = {}
    for name in names:
        # A budget of a few chunks: readers keep evicting each other's entries.
        mounts[name] = h.mount(h.frame(name), ["-o", "cache_size=600K"])
        add_fixture_expectations(h, name, mounts[name])
    run_workers(h, range(NPROC * 2))
    s = cache_stats(mounts["frame_simple-zstd.b2frame"])
    check(s["evictions"] > 0, f"no evictions under a small budget: {s}")
    check(s["bytes"] <= s["budget"], f"cache over budget: {s}")
    check(s["hits"] + s["misses"] > 0, f"no cache traffic: {s}")


def mkframe_path(h):
    path = os.path.normpath(os.path.join(os.path.dirname(h.binary), "..", "..", "bench", "mkframe"))
    if not os.path.exists(path):
        raise TestFailure(f"cannot run: {path} (bench/mkframe) is not built; build all targets")
    return path


class LazyFloat64Data:
    """mkframe float64-lz4's content, computed on demand: v[i] = sin(i*1e-5)*1000 + cos(i*3e-7)."""

    def __init__(self, nbytes):
        self.size = nbytes

    def __call__(self, offset, length):
        end = min(self.size, offset + length)
        if offset >= end:
            return b""
        first, last = offset // 8, (end + 7) // 8
        values = [math.sin(i * 1e-5) * 1000.0 + math.cos(i * 3e-7) for i in range(first, last)]
        raw = struct.pack(f"<{len(values)}d", *values)
        return raw[offset - first * 8:end - first * 8]


def generated_frame_in_parallel(h):
    EXPECTED.clear()
    frame = os.path.join(h.workdir, "float64.b2frame")
    r = subprocess.run([mkframe_path(h), "float64-lz4", frame, "48", "1024"], capture_output=True, text=True,
                       timeout=300)
    check_equal(r.returncode, 0, f"mkframe status ({r.stderr.strip()})")
    mnt = h.mount(frame, ["-o", "cache_size=5M"])
    nbytes = 48 << 20
    check_equal(os.stat(os.path.join(mnt, "data")).st_size, nbytes, "data size")
    EXPECTED[os.path.join(mnt, "data")] = LazyFloat64Data(nbytes)
    for n in (0, 7, 47):
        chunk = LazyFloat64Data(nbytes)
        base = n << 20

        def piece(offset, length, base=base, chunk=chunk):
            return chunk(base + offset, min(length, max(0, (1 << 20) - offset)))
        piece.size = 1 << 20
        EXPECTED[os.path.join(mnt, "chunks", "%08d" % n)] = piece
    run_workers(h, range(100, 100 + NPROC))
    s = cache_stats(mnt)
    check(s["evictions"] > 0, f"no evictions: {s}")
    check(s["bytes"] <= s["budget"], f"cache over budget: {s}")
    # A sequential read of everything while the readers' entries are gone.
    data = read_file(os.path.join(mnt, "data"))
    check(data[:4096] == EXPECTED[os.path.join(mnt, "data")](0, 4096), "sequential read differs at the start")
    check(data[-4096:] == EXPECTED[os.path.join(mnt, "data")](nbytes - 4096, 4096), "sequential read differs at the end")
    values = np.frombuffer(data, dtype="<f8")
    idx = np.arange(0, len(values), 997)
    want = np.array([math.sin(i * 1e-5) * 1000.0 + math.cos(i * 3e-7) for i in idx.tolist()])
    check(np.array_equal(values[idx], want), "sequential read differs from the formula")
    # On a fresh mount every byte of every chunk is asked for once: each chunk
    # leaves the cache once read (the kernel's page cache keeps it).
    fresh = h.mount(frame, ["-o", "cache_size=5M"])
    check(read_file(os.path.join(fresh, "data")) == data, "second mount reads other bytes")
    s = cache_stats(fresh)
    check(s["entries"] == 0 and s["bytes"] == 0, f"chunks read to the end stay in the cache: {s}")
    h.unmount(fresh)


def read_ahead_kb(mnt):
    dev = os.stat(mnt).st_dev
    with open(f"/sys/class/bdi/{os.major(dev)}:{os.minor(dev)}/read_ahead_kb") as f:
        return int(f.read())


def readahead_window(h):
    """The mount raises the kernel's readahead once a file is opened (as root)."""
    if os.geteuid() != 0:
        print("  not root: the readahead window cannot be set, only the default checked")
    frame = h.frame("frame_simple-zstd.b2frame")
    for options, want in (([], 4096), (["-o", "read_ahead=8M"], 8192), (["-o", "read_ahead=0"], None)):
        mnt = h.mount(frame, options)
        before = read_ahead_kb(mnt)
        with open(os.path.join(mnt, "data"), "rb") as f:
            f.read(1)
        after = read_ahead_kb(mnt)
        if want is None or os.geteuid() != 0:
            check_equal(after, before, f"readahead with {options} (KiB)")
        else:
            check_equal(after, want, f"readahead with {options} (KiB)")
        h.unmount(mnt)


def many_chunk_bytes(n):
    b = bytearray(struct.pack("<8q", *([n] * 8)))
    b[0] = (n * 31 + 1) & 0xFF
    return bytes(b)


class ManyChunksData:
    def __init__(self, nchunks):
        self.size = nchunks * 64

    def __call__(self, offset, length):
        end = min(self.size, offset + length)
        out = bytearray()
        for n in range(offset // 64, (end + 63) // 64):
            out += many_chunk_bytes(n)
        start = offset - (offset // 64) * 64
        return bytes(out[start:start + max(0, end - offset)])


def many_chunks(h):
    EXPECTED.clear()
    nchunks = 200000
    frame = os.path.join(h.workdir, "many.b2frame")
    r = subprocess.run([mkframe_path(h), "many-chunks", frame, str(nchunks)], capture_output=True, text=True,
                       timeout=300)
    check_equal(r.returncode, 0, f"mkframe status ({r.stderr.strip()})")
    mnt = h.mount(frame, ["-o", "cache_size=1M"])
    chunks_dir = os.path.join(mnt, "chunks")
    names = os.listdir(chunks_dir)
    check_equal(len(names), nchunks, "entries in chunks/")
    check_equal(sorted(names)[:2] + sorted(names)[-1:], ["00000000", "00000001", "%08d" % (nchunks - 1)],
                "chunk names")
    ls = subprocess.run(["ls", "-l", os.path.join(mnt, "raw")], capture_output=True, text=True, timeout=300)
    check_equal(ls.returncode, 0, "ls -l raw/ status")
    check_equal(len(ls.stdout.splitlines()), nchunks + 1, "ls -l raw/ lines")
    rng = random.Random(5)
    for n in rng.sample(range(nchunks), 200):
        path = os.path.join(chunks_dir, "%08d" % n)
        check_equal(os.stat(path).st_size, 64, f"size of chunks/{n:08d}")
        EXPECTED[path] = many_chunk_bytes(n)
    EXPECTED[os.path.join(mnt, "data")] = ManyChunksData(nchunks)
    run_workers(h, range(200, 200 + NPROC))


def main():
    h = Harness("concurrent readers", watchdog_seconds=600)
    h.require_fuse()
    h.test("fixtures read by many processes", fixtures_in_parallel, h)
    h.test("a 48 MB frame read by many processes", generated_frame_in_parallel, h)
    h.test("a frame of 200000 chunks", many_chunks, h)
    h.test("the readahead window", readahead_window, h)
    h.finish()


if __name__ == "__main__":
    main()
