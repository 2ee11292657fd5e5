"""array.npy written as an array: np.lib.format.open_memmap(mode="r+") slice
assignments, dd of a byte range, pwrite, across chunk and block edges of arrays
python-blosc2 makes at run time (chunk shapes that are not multiples of the
block shape, edge chunks), contiguous and sparse frames, several dtypes. After
each edit python-blosc2 4.14.1 must read back exactly the array NumPy says, the
stored chunks that were not touched must keep their bytes (raw/), and reads of
array.npy must see the written values before the commit. Refusals (a header
edited in place, a truncation, a write past the end, a read-only mount) give
their errno and one log line, and leave the frame as it was."""

import errno
import mmap
import os
import shutil
import stat
import subprocess
import sys

import blosc2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness, TestFailure, check, check_equal, read_file, wait_until  # noqa: E402
from writes import check_untouched, chunk_numbers, expect_errno, file_bytes, sh, stored_chunks  # noqa: E402


def make_array(h, name, arr, chunks, blocks, contiguous=True, **kwargs):
    """A b2nd frame of `arr` made by python-blosc2 in the work directory."""
    path = os.path.join(h.workdir, name)
    blosc2.remove_urlpath(path)
    blosc2.asarray(arr, urlpath=path, mode="w", chunks=chunks, blocks=blocks, contiguous=contiguous, **kwargs)
    return path


def read_back(path):
    a = blosc2.open(path, mode="r")
    return a[()] if a.ndim == 0 else a[:]


def cp_then_resize(h, frame, path, rng, shape, rows, where):
    """cp of a same-shape .npy over `path`, then np.save of one of `rows` rows (a resize): each
    read back through array.npy and the first through python-blosc2 too. Returns the last array."""
    want = rng.standard_normal(shape).astype("<f4")
    src, _ = npy_bytes(h, want)
    sh(f"cp {src} {path}")
    check_array(np.load(path), want, f"array.npy after cp{where}")
    check_array(read_back(frame), want, f"python-blosc2 after cp{where}, still mounted")
    want = rng.standard_normal((rows,) + tuple(shape[1:])).astype("<f4")
    np.save(path, want)
    check_array(np.load(path), want, f"array.npy after np.save of {rows} rows{where}")
    return want


def check_array(got, want, what):
    check_equal(got.dtype, want.dtype, f"{what}: dtype")
    check_equal(got.shape, want.shape, f"{what}: shape")
    if got.tobytes() != want.tobytes():
        diff = np.argwhere(got.view(np.uint8).reshape(got.shape + (-1,)) !=
                           want.view(np.uint8).reshape(want.shape + (-1,)))
        raise TestFailure(f"{what}: {len(diff)} bytes differ, first at {diff[:3].tolist()}")


def npy_header_len(path):
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        read(f)
        return f.tell()


def mount_foreground(h, frame, options=()):
    """A mount in the foreground (-f), its log in a file, to count its lines."""
    mnt = h.new_dir()
    log_path = os.path.join(h.workdir, f"foreground-{os.path.basename(mnt)}.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([h.binary, "-f", *options, frame, mnt], stdout=subprocess.DEVNULL, stderr=log,
                                stdin=subprocess.DEVNULL)
    if not (wait_until(lambda: os.path.ismount(mnt) or proc.poll() is not None) and os.path.ismount(mnt)):
        proc.kill()
        proc.wait(timeout=30)
        raise TestFailure(f"the foreground mount did not appear (daemon status {proc.poll()})")
    h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
    return mnt, proc, log_path


def stop_foreground(h, mnt, proc, log_path):
    """Unmounts, waits for the daemon (killed on every path) and returns its log lines."""
    try:
        h.unmount(mnt)
        check_equal(proc.wait(timeout=60), 0, "exit status after unmounting")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    with open(log_path) as f:
        return f.read().splitlines()


def memmap_edit(h, contiguous):
    shape, chunks, blocks = (30, 41, 23), (10, 15, 12), (4, 7, 5)
    rng = np.random.default_rng(1)
    want = rng.standard_normal(shape)
    frame = make_array(h, f"memmap-{contiguous}.b2nd", want, chunks, blocks, contiguous=contiguous)
    raw_before = stored_chunks(h, frame)
    mnt = h.mount(frame)
    path = os.path.join(mnt, "array.npy")
    region = (slice(7, 13), slice(14, 31), slice(3, 22))  # across chunk edges (10, 15) and block edges
    value = rng.standard_normal((6, 17, 19))
    m = np.lib.format.open_memmap(path, mode="r+")
    m[region] = value
    want[region] = value
    m.flush()  # msync: the kernel writes the dirty pages back and fsyncs: committed
    check_array(read_back(frame), want, "python-blosc2 reading the frame after flush(), still mounted")
    m[29, 40, 22] = -1.5  # the last item, in an edge chunk, after a commit
    want[29, 40, 22] = -1.5
    del m  # munmap: the kernel writes the pages back, and the release of the file commits them
    check_array(np.load(path), want, "np.load of array.npy after del")
    check(wait_until(lambda: np.array_equal(read_back(frame), want)),
          "python-blosc2 does not read the change made after flush() once the map is gone")
    h.unmount(mnt)
    check_array(read_back(frame), want, "python-blosc2 after unmount")
    touched = chunk_numbers(shape, chunks, region) | chunk_numbers(shape, chunks, (slice(29, 30),) * 1 +
                                                                     (slice(40, 41), slice(22, 23)))
    check_untouched(raw_before, stored_chunks(h, frame), touched, "memmap edit")


def resident_fraction(arr):
    """The share of an array's pages (of a memory map) that the kernel holds (mincore)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    page = os.sysconf("SC_PAGE_SIZE")
    start = arr.ctypes.data // page * page
    end = -(-(arr.ctypes.data + arr.nbytes) // page) * page
    vec = (ctypes.c_ubyte * ((end - start) // page))()
    if libc.mincore(ctypes.c_void_p(start), ctypes.c_size_t(end - start), vec) != 0:
        raise OSError(ctypes.get_errno(), "mincore")
    return sum(b & 1 for b in vec) / len(vec)


def pages_kept_after_own_commit(h):
    """flush() of a memory map commits its pages, which show the committed bytes
    already: the kernel keeps them, so the map is not read in again. A change
    made through chunks/ does drop them, and the map shows it."""
    shape, chunks, blocks = (256, 1024), (64, 1024), (16, 1024)
    rng = np.random.default_rng(5)
    want = rng.standard_normal(shape, dtype=np.float32)
    frame = make_array(h, "pages.b2nd", want, chunks, blocks)
    mnt = h.mount(frame)
    path = os.path.join(mnt, "array.npy")
    m = np.lib.format.open_memmap(path, mode="r+")
    value = rng.standard_normal((64, 1024), dtype=np.float32)
    m[64:128] = value
    want[64:128] = value
    m.flush()
    check_array(read_back(frame), want, "python-blosc2 after flush()")
    check_equal(resident_fraction(m[64:128]), 1.0, "share of the written rows' pages the kernel kept after flush()")
    # chunks/1 holds rows 64..127 (blocks of whole rows): its first item is [64, 0].
    fd = os.open(os.path.join(mnt, "chunks", "00000001"), os.O_WRONLY)
    try:
        os.pwrite(fd, np.float32(7.25).tobytes(), 0)
    finally:
        os.close(fd)
    want[64, 0] = 7.25
    check_equal(float(m[64, 0]), 7.25, "the map after a write through chunks/1")
    check_array(np.array(m), want, "the whole map after a write through chunks/1")
    del m
    h.unmount(mnt)
    check_array(read_back(frame), want, "python-blosc2 after unmount")


def pages_kept_after_replacement(h):
    """A cp of a .npy whose header is the one array.npy shows leaves the pages
    it wrote in the kernel (they hold the new content already), so its close
    does not wait for them to be dropped; a big-endian .npy, which array.npy
    shows converted, drops them. (The kernel itself drops them at the next
    attribute fetch that finds the new mtime: libfuse's auto_inval_data.)"""
    shape, chunks, blocks = (2048, 1024), (256, 1024), (16, 1024)
    rng = np.random.default_rng(6)
    frame = make_array(h, "replaced-pages.b2nd", rng.standard_normal(shape, dtype=np.float32), chunks, blocks)
    mnt = h.mount(frame)
    path = os.path.join(mnt, "array.npy")

    def kept_by_cp(src):
        """The share of array.npy's pages the kernel holds right after cp's close,
        seen through a map made before it, so that nothing asks for attributes."""
        with open(path, "rb") as f:
            mapped = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        try:
            pages = np.frombuffer(mapped, dtype=np.uint8)
            sh(f"cp {src} {path}")
            # The last page, partly past the end of the file, may not be one the kernel keeps.
            kept = resident_fraction(pages[:len(pages) // mmap.PAGESIZE * mmap.PAGESIZE])
            del pages
        finally:
            mapped.close()
        return kept

    want = rng.standard_normal(shape, dtype=np.float32)
    src, _ = npy_bytes(h, want, "same-header.npy")
    check_equal(kept_by_cp(src), 1.0, "share of the pages cp wrote that the kernel kept after its close")
    check_array(np.load(path), want, "array.npy after cp")
    want = rng.standard_normal(shape, dtype=np.float32)
    src, _ = npy_bytes(h, want.astype(">f4"), "big-endian.npy")
    check_equal(kept_by_cp(src), 0.0, "share of the pages of a big-endian .npy the kernel kept after cp's close")
    got = np.load(path)
    check_equal(got.dtype, np.dtype("<f4"), "array.npy's dtype after a big-endian .npy")
    check_array(got, want, "array.npy after a big-endian .npy")
    h.unmount(mnt)
    check_array(read_back(frame), want, "python-blosc2 after unmount")


def read_your_writes(h):
    shape, chunks, blocks = (64, 50), (20, 16), (8, 6)
    want = np.arange(np.prod(shape), dtype="<i4").reshape(shape)
    frame = make_array(h, "ryw.b2nd", want, chunks, blocks)
    disk_before = file_bytes(frame)
    mnt = h.mount(frame)
    path = os.path.join(mnt, "array.npy")
    hl = npy_header_len(path)
    fd = os.open(path, os.O_RDWR)
    try:
        value = np.arange(100, 100 + 37, dtype="<i4")
        offset = hl + (19 * 50 + 10) * 4  # row 19, columns 10..46: two chunks, several blocks, a row edge
        os.pwrite(fd, value.tobytes(), offset)
        flat = want.reshape(-1)
        flat[19 * 50 + 10:19 * 50 + 47] = value
        check_equal(os.pread(fd, 37 * 4, offset), value.tobytes(), "the writer reads its writes")
        check_array(np.load(path), want, "another open of array.npy before the commit")
        check_equal(file_bytes(frame), disk_before, "the frame before close/fsync")
        os.fsync(fd)
        check_array(read_back(frame), want, "python-blosc2 after fsync, still open")
        # A byte in the middle of an item, then close.
        os.pwrite(fd, b"\x7f", offset + 4 * 40 + 2)
        want.view(np.uint8).reshape(-1)[(19 * 50 + 10) * 4 + 4 * 40 + 2] = 0x7F
    finally:
        os.close(fd)
    check_array(read_back(frame), want, "python-blosc2 after close")
    check_array(np.load(path), want, "array.npy after close")
    h.unmount(mnt)


def dd_writes(h):
    shape, chunks, blocks = (300, 1000), (70, 300), (32, 64)
    rng = np.random.default_rng(2)
    want = rng.random(shape, dtype=np.float32)
    frame = make_array(h, "dd.b2nd", want, chunks, blocks)
    mnt = h.mount(frame)
    path = os.path.join(mnt, "array.npy")
    hl = npy_header_len(path)
    patch = os.path.join(h.workdir, "patch.bin")
    # One byte in the middle of an item.
    with open(patch, "wb") as f:
        f.write(b"\xab")
    at = hl + 4 * 123457 + 1
    sh(f"dd if={patch} of={path} bs=1 seek={at} conv=notrunc status=none")
    want.view(np.uint8).reshape(-1)[at - hl] = 0xAB
    check_array(read_back(frame), want, "python-blosc2 after dd of 1 byte")
    # 1 MiB from an odd offset.
    blob = rng.integers(0, 256, 1 << 20, dtype=np.uint8).tobytes()
    with open(patch, "wb") as f:
        f.write(blob)
    at = hl + 4 * 31 + 3
    sh(f"dd if={patch} of={path} bs=65536 oflag=seek_bytes seek={at} conv=notrunc status=none")
    want.view(np.uint8).reshape(-1)[at - hl:at - hl + len(blob)] = np.frombuffer(blob, np.uint8)
    check_array(np.load(path), want, "array.npy after dd of 1 MiB")
    h.unmount(mnt)
    check_array(read_back(frame), want, "python-blosc2 after dd of 1 MiB")


def dtypes(h, dtype):
    shape, chunks, blocks = (37, 29), (12, 10), (5, 4)
    rng = np.random.default_rng(3)
    raw = rng.integers(0, 256, int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
    want = raw.view(dtype).reshape(shape).copy()
    if want.dtype == np.bool_:
        want = raw[:want.size].reshape(shape) % 2 == 1
    frame = make_array(h, f"dtype-{np.dtype(dtype).str.strip('|<>')}.b2nd", want, chunks, blocks)
    mnt = h.mount(frame)
    path = os.path.join(mnt, "array.npy")
    m = np.lib.format.open_memmap(path, mode="r+")
    check_equal(m.dtype, want.dtype, "the memmap's dtype")
    region = (slice(5, 31), slice(3, 27))
    src = want[::-1, ::-1][region].copy()
    m[region] = src
    want[region] = src
    m.flush()
    del m
    h.unmount(mnt)
    check_array(read_back(frame), want, f"python-blosc2 after a memmap edit of {np.dtype(dtype)}")


def refusals(h):
    shape, chunks, blocks = (40, 30), (16, 16), (8, 8)
    want = np.arange(1200, dtype="<f8").reshape(shape)
    frame = make_array(h, "refuse.b2nd", want, chunks, blocks)
    disk = file_bytes(frame)
    mnt, proc, log = mount_foreground(h, frame)
    path = os.path.join(mnt, "array.npy")
    hl = npy_header_len(path)
    size = os.stat(path).st_size
    header = read_file(path)[:hl]
    fd = os.open(path, os.O_RDWR)
    try:
        os.pwrite(fd, header, 0)  # the bytes it holds: accepted
        edited = header.replace(b"(40, 30)", b"(30, 40)")
        check(edited != header, "the header names the shape")
        expect_errno("a header edited in place", lambda: os.pwrite(fd, edited, 0), errno.EINVAL)
        expect_errno("a write past the end", lambda: os.pwrite(fd, b"\0" * 16, size - 8), errno.EINVAL)
        expect_errno("ftruncate to another size", lambda: os.ftruncate(fd, size - 8), errno.EINVAL)
        expect_errno("ftruncate to a larger size", lambda: os.ftruncate(fd, size + 8), errno.EINVAL)
    finally:
        os.close(fd)
    check_equal(file_bytes(frame), disk, "the frame after refused edits")
    lines = stop_foreground(h, mnt, proc, log)
    refused = [line for line in lines if "array.npy" in line and "refused" in line]
    check_equal(len(refused), 4, f"one log line per refused edit: {refused}")
    # A read-only mount.
    mnt = h.mount(frame, ["-o", "ro"])
    path = os.path.join(mnt, "array.npy")
    expect_errno("opening array.npy for writing on -o ro", lambda: os.open(path, os.O_RDWR), errno.EROFS)
    check_equal(os.stat(path).st_mode & 0o222, 0, "write bits on -o ro")
    h.unmount(mnt)
    check_equal(file_bytes(frame), disk, "the frame after -o ro")
    check_array(read_back(frame), want, "python-blosc2 after refusals")


def close_errno(path, data, create=False):
    """Writes `data` as a whole new file (open with O_TRUNC, and O_CREAT when
    `create`, write, close), as cp does; returns the errno of the first failure,
    0 when all went well."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | (os.O_CREAT if create else 0), 0o644)
    err = 0
    try:
        os.write(fd, data)
    except OSError as e:
        err = e.errno
    try:
        os.close(fd)
    except OSError as e:
        err = err or e.errno
    return err


def npy_bytes(h, arr, name="x.npy"):
    path = os.path.join(h.workdir, name)
    np.save(path, arr)
    with open(path, "rb") as f:
        return path, f.read()


def replacements(h, contiguous):
    shape, chunks, blocks = (50, 33, 7), (20, 10, 7), (6, 4, 3)
    rng = np.random.default_rng(4)
    frame = make_array(h, f"replace-{contiguous}.b2nd", rng.standard_normal(shape).astype("<f4"), chunks, blocks,
                       contiguous=contiguous, cparams={"codec": blosc2.Codec.LZ4, "clevel": 5})
    mnt = h.mount(frame)
    path = os.path.join(mnt, "array.npy")
    # cp of a same-shape .npy; np.save of a larger first dimension: the array is resized, chunks and blocks kept.
    want = cp_then_resize(h, frame, path, rng, shape, 71, "")
    a = blosc2.open(frame, mode="r")
    check_equal((a.shape, a.chunks, a.blocks), ((71, 33, 7), chunks, blocks), "shape, chunks, blocks after resize")
    check_equal(a.schunk.cparams.codec, blosc2.Codec.LZ4, "codec after resize")
    check_array(a[:], want, "python-blosc2 after resize")
    # Smaller, through shutil.copyfile.
    want = rng.standard_normal((9, 2, 7)).astype("<f4")
    src, _ = npy_bytes(h, want)
    import shutil
    shutil.copyfile(src, path)
    check_array(read_back(frame), want, "python-blosc2 after copyfile of a smaller array")
    # A big-endian .npy into the little-endian array.
    want = rng.standard_normal((9, 2, 7)).astype("<f4")
    src, _ = npy_bytes(h, want.astype(">f4"))
    sh(f"cp {src} {path}")
    check_array(read_back(frame), want, "python-blosc2 after a big-endian .npy")
    check_equal(np.load(path).dtype, np.dtype("<f4"), "array.npy's dtype after a big-endian .npy")
    # A sparse .npy whose zero tail is a hole: cp writes the data, then grows the file to its size.
    want = np.zeros((400, 2, 7), "<f4")
    want[:2] = rng.standard_normal((2, 2, 7))
    src, raw = npy_bytes(h, want, "sparse.npy")
    with open(src, "wb") as f:
        f.write(raw[:4096])
        f.truncate(len(raw))
    check_equal(open(src, "rb").read(), raw, "the sparse .npy's bytes")
    sh(f"cp --sparse=always {src} {path}")
    check_array(read_back(frame), want, "python-blosc2 after a sparse .npy")
    check_equal(os.stat(path).st_size, len(raw), "array.npy's size after a sparse .npy")
    h.unmount(mnt)
    check_array(read_back(frame), want, "python-blosc2 after unmount")


def large_replacement(h):
    """A replacement of several pieces of what is read at a time from the held
    file (8 MiB), with chunks spanning pieces, resized on the way."""
    chunks, blocks = (70, 90, 50), (16, 32, 25)
    rng = np.random.default_rng(5)
    frame = make_array(h, "large.b2nd", rng.standard_normal((300, 200, 50)), chunks, blocks)
    mnt = h.mount(frame)
    path = os.path.join(mnt, "array.npy")
    want = rng.standard_normal((333, 200, 50))
    src, _ = npy_bytes(h, want)
    sh(f"cp {src} {path}")
    h.unmount(mnt)
    a = blosc2.open(frame, mode="r")
    check_equal((a.shape, a.chunks, a.blocks), (want.shape, chunks, blocks), "shape, chunks, blocks")
    check_array(a[:], want, "python-blosc2 after a 26 MB replacement")


def out_of_order_replacement(h):
    """A replacement whose bytes do not all come in order: the ones that do go
    straight into the new frame as they arrive, the others wait in the holding
    file; a write behind what was taken, a read of it and a truncation into it
    give those bytes back (decoded from the new frame) and the holding file
    takes over. Whatever the order, python-blosc2 reads the file's last bytes."""
    shape, chunks, blocks = (90, 40, 30), (16, 24, 30), (8, 8, 10)
    rng = np.random.default_rng(6)
    frame = make_array(h, "order.b2nd", rng.standard_normal(shape).astype("<f4"), chunks, blocks)
    mnt = h.mount(frame)
    path = os.path.join(mnt, "array.npy")

    def replace(steps, want, what):
        fd = os.open(path, os.O_RDWR | os.O_TRUNC)
        try:
            for step in steps:
                step(fd)
        finally:
            os.close(fd)
        check_array(np.load(path), want, f"array.npy after {what}")
        check_array(read_back(frame), want, f"python-blosc2 after {what}")

    want = rng.standard_normal(shape).astype("<f4")
    _, data = npy_bytes(h, want)
    n, third = len(data), len(data) // 3
    piece = 70001  # never a row, a chunk or an item
    in_order = [lambda fd, a=a: os.pwrite(fd, data[a:a + piece], a) for a in range(0, n, piece)]
    replace(in_order, want, "writes in order in odd pieces")

    # A piece skipped and written after the ones past it.
    want = rng.standard_normal(shape).astype("<f4")
    _, data = npy_bytes(h, want)
    replace([lambda fd: os.pwrite(fd, data[:third], 0),
             lambda fd: os.pwrite(fd, data[2 * third:], 2 * third),
             lambda fd: os.pwrite(fd, data[third:2 * third], third)], want, "the middle third written last")

    # Bytes written again behind what the new frame took, then the rest.
    want = rng.standard_normal(shape).astype("<f4")
    _, data = npy_bytes(h, want)
    stale = bytes(len(data))
    replace([lambda fd: os.pwrite(fd, data[:2 * third], 0),
             lambda fd: os.pwrite(fd, stale[third // 2:third], third // 2),
             lambda fd: os.pwrite(fd, data[third // 2:third], third // 2),
             lambda fd: os.pwrite(fd, data[2 * third:], 2 * third)], want, "a range written again")

    # A read of what was taken (read your writes), a truncation into it.
    want = rng.standard_normal(shape).astype("<f4")
    _, data = npy_bytes(h, want)

    def read_back_part(fd):
        check_equal(os.pread(fd, 5000, third - 2000), data[third - 2000:third + 3000], "a read during the replacement")

    replace([lambda fd: os.pwrite(fd, data[:2 * third], 0), read_back_part,
             lambda fd: os.ftruncate(fd, third),
             lambda fd: os.pwrite(fd, data[third:], third)], want, "a read and a truncation midway")
    # The header written again with another shape of the same size: the close
    # makes the array of the header the file ends with.
    want = rng.standard_normal(shape).astype("<f4")
    _, data = npy_bytes(h, want)
    other = want.reshape((shape[0] // 2, shape[1] * 2, shape[2]))
    _, other_data = npy_bytes(h, other, "other.npy")
    check_equal(len(other_data), len(data), "the reshaped .npy's size")
    header_len = npy_header_len(os.path.join(h.workdir, "other.npy"))
    replace([lambda fd: os.pwrite(fd, data[:2 * third], 0),
             lambda fd: os.pwrite(fd, other_data[:header_len], 0),
             lambda fd: os.pwrite(fd, data[2 * third:], 2 * third)], other, "a header rewritten midway")
    h.unmount(mnt)
    check_array(read_back(frame), other, "python-blosc2 after unmount")


def replacement_refusals(h):
    shape, chunks, blocks = (40, 30), (16, 16), (8, 8)
    want = np.arange(1200, dtype="<f8").reshape(shape)
    frame = make_array(h, "refuse-replace.b2nd", want, chunks, blocks)
    disk = file_bytes(frame)
    mnt, proc, log = mount_foreground(h, frame)
    path = os.path.join(mnt, "array.npy")
    cases = [
        ("another dtype", npy_bytes(h, want.astype("<f4"))[1], "dtype"),
        ("another ndim", npy_bytes(h, want.reshape(40, 30, 1))[1], "dimensions"),
        ("a truncated .npy", npy_bytes(h, want)[1][:-9], "incomplete"),
        ("Fortran order", npy_bytes(h, np.asfortranarray(want))[1], "Fortran"),
        ("not a .npy", b"hello", "not a .npy"),
    ]
    for what, data, word in cases:
        check_equal(errno.errorcode.get(close_errno(path, data)), "EINVAL", f"errno at close for {what}")
        check_equal(file_bytes(frame), disk, f"the frame after {what}")
        check_array(np.load(path), want, f"array.npy after {what}")
    lines = stop_foreground(h, mnt, proc, log)
    errors = [line for line in lines if " error: " in line]
    check_equal(len(errors), len(cases), f"one error line per refused replacement: {errors}")
    for (what, _, word), line in zip(cases, errors):
        check("array.npy" in line and word in line, f"the line for {what} names the file and why: {line}")
    check_equal(file_bytes(frame), disk, "the frame after refused replacements")


def store_leaf_and_collection(h):
    """A leaf of a writable .b2d store (a frame file of its own) and a dataset of a
    writable local collection (a folder of frames) take memmap edits too."""
    rng = np.random.default_rng(6)
    store = os.path.join(h.workdir, "s.b2d")
    leaf = rng.standard_normal((40, 30))
    with blosc2.DictStore(store, mode="w", threshold=0) as s:
        s["/arr"] = blosc2.asarray(leaf, chunks=(16, 16), blocks=(8, 5))
    mnt = h.mount(store)
    paths = [os.path.join(root, "array.npy") for root, _, files in os.walk(mnt) if "array.npy" in files]
    check_equal(len(paths), 1, f"array.npy files in the store's tree: {paths}")
    m = np.lib.format.open_memmap(paths[0], mode="r+")
    m[10:25, 3:20] = -7.0
    m.flush()
    del m
    leaf[10:25, 3:20] = -7.0
    h.unmount(mnt)
    with blosc2.DictStore(store, mode="r") as s:
        check_array(s["/arr"][:], leaf, "python-blosc2 reading the store leaf")

    folder = os.path.join(h.workdir, "collection")
    os.makedirs(folder, exist_ok=True)
    want = rng.standard_normal((33, 20)).astype("<f4")
    frame = make_array(h, os.path.join("collection", "d.b2nd"), want, (10, 8), (4, 4))
    mnt = h.mount(folder)
    path = os.path.join(mnt, "d.b2nd", "array.npy")
    m = np.lib.format.open_memmap(path, mode="r+")
    m[5:30, 2] = 3.5
    m.flush()
    del m
    want[5:30, 2] = 3.5
    h.unmount(mnt)
    check_array(read_back(frame), want, "python-blosc2 reading the collection's dataset")


def sparse_tree_names(frame):
    """What a sparse frame's directory holds besides its chunk files."""
    return sorted(n for n in os.listdir(frame) if not (len(n) == 14 and n.endswith(".chunk")))


def sparse_swap(h):
    """A sparse frame's replacement is a complete new directory written beside
    it and exchanged with it in one step: python-blosc2 reads the new array; the
    .b2lock sidecar stays the same file (other writers hold or wait on it) and
    its counter goes on; the directory and files keep their modes; nothing is
    left beside the frame, and what an earlier killed replacement left there goes."""
    shape, chunks, blocks = (40, 30, 20), (16, 16, 20), (8, 8, 10)
    rng = np.random.default_rng(11)
    frame = make_array(h, "swap.b2nd", rng.standard_normal(shape).astype("<f4"), chunks, blocks, contiguous=False)
    lock = os.path.join(frame, ".b2lock")
    with open(lock, "wb") as f:
        f.write(bytes(16))
    lock_ino = os.stat(lock).st_ino
    os.chmod(os.path.join(frame, "chunks.b2frame"), 0o640)
    os.chmod(frame, 0o750)
    stale = os.path.join(h.workdir, ".swap.b2nd.compact-0123456789abcdef")
    shutil.rmtree(stale, ignore_errors=True)
    shutil.copytree(frame, stale)  # what a replacement killed after its exchange leaves
    mnt, proc, log = mount_foreground(h, frame)
    try:
        path = os.path.join(mnt, "array.npy")
        want = cp_then_resize(h, frame, path, rng, shape, 57, " into a sparse frame")
    finally:
        lines = stop_foreground(h, mnt, proc, log)
    a = blosc2.open(frame, mode="r")
    check_equal((a.shape, a.chunks, a.blocks), ((57, 30, 20), chunks, blocks), "shape, chunks, blocks after resize")
    check_array(a[:], want, "python-blosc2 after a resizing replacement of a sparse frame")
    check(os.path.isdir(frame), "the frame is still a sparse frame")
    check_equal(os.stat(lock).st_ino, lock_ino, "the .b2lock sidecar is the same file after the exchanges")
    with open(lock, "rb") as f:
        counter = int.from_bytes(f.read()[8:16], "little")
    check(counter >= 2, f"the .b2lock counter was bumped by each replacement (it says {counter})")
    check_equal(stat.S_IMODE(os.stat(frame).st_mode), 0o750, "the directory's mode")
    for name in os.listdir(frame):
        if name != ".b2lock":
            check_equal(stat.S_IMODE(os.stat(os.path.join(frame, name)).st_mode), 0o640, f"{name}'s mode")
    check_equal(sparse_tree_names(frame), [".b2lock", "chunks.b2frame"], "the new directory's files")
    check_equal(len(os.listdir(frame)) - 2, 4 * 2, "chunk files of the resized array")
    left = [n for n in os.listdir(h.workdir) if n.startswith(".swap.b2nd.")]
    check_equal(left, [], "temporary directories left beside the frame")
    held = [line for line in lines if "held in memory" in line]
    check_equal(held, [], "no fallback to holding the chunks in memory")


LOCKING_WRITER = """
import sys, time, blosc2
for i in range(int(sys.argv[2])):
    a = blosc2.open(sys.argv[1], mode="a")  # a new handle each time: it opens the frame's .b2lock anew
    a.schunk.vlmeta["writer"] = i
    del a
    time.sleep(0.005)
"""


def sparse_swap_with_locking_writer(h):
    """Replacements of a sparse frame while python-blosc2 (BLOSC_LOCKING=1)
    writes a vlmetalayer through the frame's .b2lock: each write lands in the
    frame that is live when it is made (the exchange carries the lock file over,
    so writer and mount keep excluding each other), and the last one survives."""
    shape = (64, 256, 256)
    frame = make_array(h, "locked.b2nd", np.zeros(shape, "<f4"), (8, 256, 256), (2, 64, 256), contiguous=False)
    want = (np.arange(int(np.prod(shape))) % 1013).astype("<f4").reshape(shape)
    src, _ = npy_bytes(h, want, "locked.npy")
    env = dict(os.environ, BLOSC_LOCKING="1")  # the writer's; the mount locks whenever the sidecar exists
    mnt = h.mount(frame)
    rounds = 200
    writer = subprocess.Popen([sys.executable, "-c", LOCKING_WRITER, frame, str(rounds)], env=env,
                              stderr=subprocess.PIPE, text=True)
    try:
        copies = 0
        while writer.poll() is None and copies < 20:
            shutil.copyfile(src, os.path.join(mnt, "array.npy"))
            copies += 1
        _, err = writer.communicate(timeout=120)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait(timeout=30)
        h.unmount(mnt)
    check_equal(writer.returncode, 0, f"the locking writer's exit status ({err.strip()[-300:]})")
    check(copies >= 2, f"replacements made while the writer ran: {copies}")
    print(f"  {copies} replacements while the writer made {rounds} vlmetalayer writes", flush=True)
    a = blosc2.open(frame, mode="r")
    check_array(a[:], want, "python-blosc2 after replacements beside a locking writer")
    check_equal(a.schunk.vlmeta["writer"], rounds - 1, "the locking writer's last vlmetalayer write")
    check_equal([n for n in os.listdir(frame) if "b2lock" in n], [".b2lock"], "one lock sidecar in the frame")
    check_equal(os.stat(os.path.join(frame, ".b2lock")).st_nlink, 1, "the lock sidecar's links")


def sparse_fallback(h):
    """Where the sparse frame's directory cannot be exchanged with a new one
    (here its parent is a read-only bind mount and the frame a writable bind
    mount on top), a replacement is one commit of chunk files (the chunks held
    in memory), with one log line saying so; python-blosc2 reads it back. A new
    array there (it needs a new frame header) is EOPNOTSUPP at close, one log
    line, the frame left empty."""
    shape, chunks, blocks = (30, 20), (16, 16), (8, 8)
    rng = np.random.default_rng(12)
    base = os.path.join(h.workdir, "fallback")
    ro = os.path.join(h.workdir, "fallback-ro")
    for d in (base, ro):
        os.makedirs(d, exist_ok=True)
    frame = os.path.join(base, "f.b2nd")
    blosc2.remove_urlpath(frame)
    blosc2.asarray(rng.standard_normal(shape), urlpath=frame, mode="w", chunks=chunks, blocks=blocks,
                   contiguous=False)
    empty = os.path.join(base, "empty.b2nd")
    shutil.rmtree(empty, ignore_errors=True)
    h.unmount(h.mount(empty, ["-o", "create", "-o", "sparse"]))
    h.mount_plain(["--bind", base, ro], ro)
    h.mount_plain(["-o", "remount,bind,ro", ro], ro)
    inner, inner_empty = os.path.join(ro, "f.b2nd"), os.path.join(ro, "empty.b2nd")
    h.mount_plain(["--bind", frame, inner], inner)
    h.mount_plain(["--bind", empty, inner_empty], inner_empty)
    try:
        check(not os.access(ro, os.W_OK), "the parent is read-only")
        mnt, proc, log = mount_foreground(h, inner)
        try:
            want = rng.standard_normal((35, 20))
            src, _ = npy_bytes(h, want)
            sh(f"cp {src} {os.path.join(mnt, 'array.npy')}")
        finally:
            lines = stop_foreground(h, mnt, proc, log)
        mnt, proc, log = mount_foreground(h, inner_empty)
        try:
            _, data = npy_bytes(h, np.arange(12.0))
            err = close_errno(os.path.join(mnt, "array.npy"), data, create=True)
            check_equal(err, errno.EOPNOTSUPP, "errno of a new array where the directory cannot be exchanged")
        finally:
            empty_lines = stop_foreground(h, mnt, proc, log)
    finally:
        h.unmount_plain(inner_empty)
        h.unmount_plain(inner)
        h.unmount_plain(ro)
    check_array(read_back(frame), want, "python-blosc2 after a replacement held in memory")
    held = [line for line in lines if "held in memory" in line]
    check_equal(len(held), 1, f"one log line says the chunks were held in memory: {held}")
    refused = [line for line in empty_lines if "array.npy" in line and "RENAME_EXCHANGE" in line]
    check_equal(len(refused), 1, f"one log line says why the new array was refused: {refused}")
    check_equal(blosc2.open(empty).nchunks, 0, "the empty sparse frame after the refusal")


def sparse_new_array(h):
    """-o create -o sparse makes an empty sparse frame; cp x.npy array.npy makes
    it an array of x (a new directory swapped in), with python-blosc2's chunks
    and blocks, read back exactly."""
    frame = os.path.join(h.workdir, "new-sparse.b2nd")
    shutil.rmtree(frame, ignore_errors=True)
    x = (np.arange(60 * 70 * 9).reshape(60, 70, 9) % 251).astype("<i2")
    src, _ = npy_bytes(h, x, "new-sparse.npy")
    mnt = h.mount(frame, ["-o", "create", "-o", "sparse"])
    try:
        check(os.path.isdir(frame), "-o create -o sparse makes a directory")
        check(not os.path.exists(os.path.join(mnt, "array.npy")), "an empty frame shows no array.npy")
        shutil.copyfile(src, os.path.join(mnt, "array.npy"))
        check_array(np.load(os.path.join(mnt, "array.npy")), x, "array.npy of the new array")
    finally:
        h.unmount(mnt)
    check(os.path.isdir(frame), "the new array is a sparse frame")
    a = blosc2.open(frame, mode="r")
    check_array(a[:], x, "python-blosc2 reading the new array of a sparse frame")
    want = blosc2.asarray(x)
    check_equal((a.chunks, a.blocks), (want.chunks, want.blocks), "(chunks, blocks) against blosc2.asarray's")
    left = [n for n in os.listdir(h.workdir) if n.startswith(".new-sparse.b2nd.")]
    check_equal(left, [], "temporary directories left beside the frame")


def region_writes(h, kind):
    """Chunks held by region (docs/writing.md): a slab of whole chunks written with
    pwrite commits without decoding a block; a slab of half chunks, an edge slab
    (items only, never the padding) and unaligned writes read back right before and
    after the commit. python-blosc2 reads back exactly the values NumPy says, and
    chunks the writes did not touch keep their stored bytes. `kind`: a contiguous
    frame, a sparse one, or the leaf of a .b2d store."""
    shape, chunks, blocks = (45, 36, 50), (10, 12, 50), (5, 6, 25)  # rows 40..44: edge chunks
    rng = np.random.default_rng(11)
    want = rng.standard_normal(shape).astype("<f4")
    if kind == "store":
        target = os.path.join(h.workdir, "region.b2d")
        blosc2.remove_urlpath(target)
        with blosc2.DictStore(target, mode="w", threshold=0) as s:
            s["/arr"] = blosc2.asarray(want, chunks=chunks, blocks=blocks)

        def stored():
            with blosc2.DictStore(target, mode="r") as s:
                leaf = s["/arr"]
                return [leaf.schunk.get_lazychunk(i) for i in range(leaf.schunk.nchunks)]

        def reference():
            with blosc2.DictStore(target, mode="r") as s:
                return s["/arr"][:]
    else:
        target = make_array(h, f"region-{kind}.b2nd", want, chunks, blocks, contiguous=kind == "contiguous")

        def stored():
            return stored_chunks(h, target)

        def reference():
            return read_back(target)
    before = stored()
    touched = set()
    mnt = h.mount(target)
    try:
        paths = [os.path.join(root, "array.npy") for root, _, files in os.walk(mnt) if "array.npy" in files]
        check_equal(len(paths), 1, f"array.npy files: {paths}")
        path = paths[0]
        row = 36 * 50 * 4
        hl = npy_header_len(path)
        stats_at = next(d for d in (os.path.dirname(path), mnt)
                        if os.path.exists(os.path.join(d, ".blosc2fs-cache")))
        decoded = h.cache_stats(stats_at)["decoded_blocks"]
        fd = os.open(path, os.O_WRONLY)
        try:
            # Rows 10..19: every byte of chunks 3..5 (row 1 of the grid), in 64 KiB writes, last one first.
            slab = rng.standard_normal((10, 36, 50)).astype("<f4")
            data = slab.tobytes()
            pieces = list(range(0, len(data), 1 << 16))
            for at in reversed(pieces):
                os.pwrite(fd, data[at:at + (1 << 16)], hl + 10 * row + at)
            want[10:20] = slab
            touched |= chunk_numbers(shape, chunks, (slice(10, 20), slice(None), slice(None)))
            os.fsync(fd)
            check_equal(h.cache_stats(stats_at)["decoded_blocks"], decoded,
                        "blocks decoded by a slab of whole chunks written and committed")
        finally:
            os.close(fd)
        check_array(reference(), want, f"python-blosc2 after a slab of whole chunks ({kind})")
        fd = os.open(path, os.O_RDWR)
        try:
            # Rows 20..24: half of each chunk of grid row 2; rows 40..44: the edge chunks' items.
            for rows in (slice(20, 25), slice(40, 45)):
                value = rng.standard_normal((5, 36, 50)).astype("<f4")
                os.pwrite(fd, value.tobytes(), hl + rows.start * row)
                want[rows] = value
                touched |= chunk_numbers(shape, chunks, (rows, slice(None), slice(None)))
            # Unaligned: 999 bytes from the middle of an item, and one byte.
            blob = rng.integers(0, 256, 999, dtype=np.uint8).tobytes()
            at = 31 * row + 4 * 777 + 3
            os.pwrite(fd, blob, hl + at)
            want.view(np.uint8).reshape(-1)[at:at + len(blob)] = np.frombuffer(blob, np.uint8)
            os.pwrite(fd, b"\x5a", hl + 2 * row + 4 * 5 + 1)
            want.view(np.uint8).reshape(-1)[2 * row + 4 * 5 + 1] = 0x5A
            for item in (at // 4, (at + len(blob) - 1) // 4, (2 * row + 21) // 4):
                touched |= chunk_numbers(shape, chunks, tuple(slice(int(i), int(i) + 1)
                                                              for i in np.unravel_index(item, shape)))
            check_equal(os.pread(fd, len(blob), hl + at), blob, "the writer reads its unaligned write")
            check_array(np.load(path), want, f"array.npy before the commit ({kind})")
            # Pages of untouched items written back unchanged (a memory map's write-back).
            os.pwrite(fd, want[30:31].tobytes(), hl + 30 * row)
        finally:
            os.close(fd)
        check_array(np.load(path), want, f"array.npy after close ({kind})")
    finally:
        h.unmount(mnt)
    check_array(reference(), want, f"python-blosc2 after half-chunk, edge and unaligned writes ({kind})")
    check_untouched(before, stored(), touched, f"region writes ({kind})")


def main():
    h = Harness("array.npy written as an array", watchdog_seconds=300)
    h.require_fuse()
    h.test("memmap slice assignment across chunk and block edges, 3-d, contiguous", memmap_edit, h, True)
    h.test("memmap slice assignment across chunk and block edges, 3-d, sparse frame", memmap_edit, h, False)
    h.test("read your writes; fsync and close commit", read_your_writes, h)
    h.test("a memory map keeps its pages after its own commit, not after a write through chunks/",
           pages_kept_after_own_commit, h)
    h.test("a cp of a .npy keeps the pages it wrote, a big-endian one's go", pages_kept_after_replacement, h)
    h.test("dd of 1 byte inside an item and of 1 MiB", dd_writes, h)
    for kind in ("contiguous", "sparse", "store"):
        h.test(f"chunks held by region: whole-chunk, half-chunk, edge and unaligned writes ({kind})",
               region_writes, h, kind)
    for dtype in ("<f2", "|b1", "<c16", np.dtype([("a", "<i4"), ("b", "<f8"), ("c", "S3")])):
        h.test(f"memmap edit of a {np.dtype(dtype)} array", dtypes, h, dtype)
    h.test("refusals: header edits, truncation, writes past the end, -o ro", refusals, h)
    h.test("whole replacement: cp, np.save resizing, copyfile, big-endian (contiguous)", replacements, h, True)
    h.test("whole replacement: cp, np.save resizing, copyfile, big-endian (sparse)", replacements, h, False)
    h.test("a leaf of a .b2d store and a dataset of a local collection", store_leaf_and_collection, h)
    h.test("a 26 MB replacement, resized, in several pieces", large_replacement, h)
    h.test("a replacement written out of order, read and truncated midway", out_of_order_replacement, h)
    h.test("refused replacements: dtype, ndim, truncated, Fortran order, not .npy", replacement_refusals, h)
    h.test("sparse frame: a new directory exchanged in, .b2lock kept, modes kept, leftovers removed", sparse_swap, h)
    h.test("sparse frame replaced while python-blosc2 writes through its .b2lock", sparse_swap_with_locking_writer, h)
    h.test("sparse frame whose directory cannot be exchanged: chunks held in memory; a new array EOPNOTSUPP",
           sparse_fallback, h)
    h.test("a new array in a sparse frame: -o create -o sparse, then cp", sparse_new_array, h)
    h.finish()


if __name__ == "__main__":
    main()
