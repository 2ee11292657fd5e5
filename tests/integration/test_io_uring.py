"""FUSE over io_uring (-o io_uring, docs/performance.md): both paths and the switch
between them. Every other script already mounts over io_uring where the kernel allows
(harness.py, uring_switch.py); this one checks what only it can:

- the fallback: with the kernel's switch off (uring_switch.forced("N"), put back after),
  -o io_uring=auto mounts through /dev/fuse with one line saying why and how to switch
  it on, =on refuses the mount with one line, =off says nothing;
- over io_uring: .blosc2fs-cache says io_uring=1, the ring threads and the named pools
  that answer long requests are there, every kind of file reads as it should from
  readers in parallel (short reads on the pools of their CPUs, long ones on the shared
  pool), writes commit, and a daemon stopped while requests are in the pools exits
  cleanly (libfuse frees a queue's requests once its thread has ended: the thread
  waits for the pools' answers first)."""

import os
import signal
import subprocess
import sys
import threading

import blosc2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import uring_switch  # noqa: E402
from harness import (Harness, TestFailure, check, check_equal, daemon_pid, gunzip, read_file,  # noqa: E402
                     wait_until)

FIXTURE = "b2nd-3d-f8.b2nd"


def stderr_lines(r):
    return [line for line in r.stderr.splitlines() if line.strip()]


def mount_reporting(h, frame, options):
    """Mounts with h.run (the command's stderr is wanted); returns (mount point, stderr lines)."""
    mnt = h.new_dir()
    r = h.run(options + [frame, mnt])
    if r.returncode != 0:
        raise TestFailure(f"mount {' '.join(options)} failed with status {r.returncode}: {r.stderr.strip()}")
    h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
    return mnt, stderr_lines(r)


def require_io_uring(h):
    if not h.io_uring:
        raise TestFailure(f"cannot run: the kernel gives no FUSE over io_uring here: {uring_switch.unavailable()}")


def check_fixture_reads(h, mnt, what):
    want = gunzip(h.expect_file(FIXTURE, ".data.gz"))
    check_equal(read_file(os.path.join(mnt, "data")), want, f"{what}: data")
    expect = h.expect(FIXTURE)
    chunks = b"".join(read_file(os.path.join(mnt, "chunks", "%08d" % n)) for n in range(expect["nchunks"]))
    check_equal(chunks, want, f"{what}: chunks/ one after the other")


def fallback(h):
    if uring_switch.read_parameter() is None:
        raise TestFailure(f"cannot run: {uring_switch.unavailable()}")
    if os.geteuid() != 0:
        raise TestFailure("cannot run: switching the kernel's FUSE over io_uring off needs root")
    frame = h.frame(FIXTURE)
    with uring_switch.forced("N"):
        mnt, lines = mount_reporting(h, frame, ["-o", "ro"])
        check_equal(len(lines), 1, f"-o io_uring=auto with the switch off: one line on stderr, got {lines}")
        check(uring_switch.PARAMETER in lines[0] and "echo Y" in lines[0] and "/dev/fuse" in lines[0],
              f"the line says why and how to switch it on: {lines[0]!r}")
        off_mnt, off_lines = mount_reporting(h, frame, ["-o", "ro,io_uring=off"])
        check_equal(off_lines, [], "-o io_uring=off: nothing on stderr")
        refused = h.new_dir()
        r = h.run(["-o", "ro,io_uring=on", frame, refused])
        check_equal(r.returncode, 5, f"-o io_uring=on with the switch off: exit status ({r.stderr.strip()})")
        lines = stderr_lines(r)
        check(len(lines) == 1 and lines[0].startswith("blosc2fs: cannot mount ") and "io_uring=on" in lines[0]
              and uring_switch.PARAMETER in lines[0], f"-o io_uring=on refused in one line: {lines}")
        check(not os.path.ismount(refused), "-o io_uring=on with the switch off mounted all the same")
    # Mounted while the switch was off, they stay on /dev/fuse.
    for m, what in ((mnt, "auto"), (off_mnt, "off")):
        check_equal(h.cache_stats(m)["io_uring"], 0, f"-o io_uring={what}: .blosc2fs-cache")
        check_fixture_reads(h, m, f"through /dev/fuse (-o io_uring={what})")
    r = h.run(["-s", "-o", "io_uring=on", frame, refused])
    check_equal(r.returncode, 1, f"-s -o io_uring=on: exit status ({r.stderr.strip()})")
    check_equal(len(stderr_lines(r)), 1, f"-s -o io_uring=on: one line ({r.stderr.strip()})")


def thread_names(pid):
    names = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return names


def make_frames(h):
    """A 16 MiB float64 array in 1 MiB chunks (reads of 1 MiB: the shared pool) and one
    of 600 chunks of 4 KiB (small reads: the pools of the CPUs); returns {path: array}."""
    made = {}
    directory = h.new_dir("frames")
    rng = np.random.default_rng(53)
    big = np.cumsum(rng.normal(size=(2048, 1024)), axis=1)
    small = rng.integers(0, 1000, size=600 * 1024, dtype=np.int32)
    for name, a, chunks in (("big.b2nd", big, (128, 1024)), ("small.b2nd", small, (1024,))):
        path = os.path.join(directory, name)
        blosc2.asarray(a, urlpath=path, mode="w", chunks=chunks)
        made[path] = a
    return made


def parallel(jobs):
    """Runs the callables in threads at once; returns their exceptions."""
    errors = []

    def run(job):
        try:
            job()
        except Exception as e:  # collected, reported by the caller
            errors.append(e)

    threads = [threading.Thread(target=run, args=(j,)) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def over_io_uring(h):
    require_io_uring(h)
    frames = make_frames(h)
    mounts = {}
    for path in frames:
        mnt, lines = mount_reporting(h, path, ["-o", "ro,io_uring=on"])
        check_equal(lines, [], f"{os.path.basename(path)}: nothing on stderr over io_uring")
        mounts[path] = mnt
    big, small = (mounts[p] for p in frames)

    def npy(mnt, want):
        def job():
            got = np.load(os.path.join(mnt, "array.npy"))
            if not np.array_equal(got, want):
                raise TestFailure(f"{mnt}/array.npy differs from the array written")
        return job

    def chunk_files(mnt, want, step):
        def job():
            flat = want.tobytes()
            names = sorted(os.listdir(os.path.join(mnt, "chunks")))
            size = len(read_file(os.path.join(mnt, "chunks", names[0])))
            for k in range(0, len(names), step):
                got = read_file(os.path.join(mnt, "chunks", names[k]))
                if got != flat[k * size:(k + 1) * size]:
                    raise TestFailure(f"{mnt}/chunks/{names[k]} differs from the array written")
        return job

    (big_array, small_array) = frames.values()
    errors = parallel([npy(big, big_array), npy(small, small_array), chunk_files(small, small_array, 1),
                       chunk_files(small, small_array, 7), chunk_files(big, big_array, 1),
                       lambda: read_file(os.path.join(big, "data"))])
    check(not errors, f"{len(errors)} readers failed in parallel, e.g. {errors[:2]}")
    for mnt in (big, small):
        check_equal(h.cache_stats(mnt)["io_uring"], 1, f"{mnt}: .blosc2fs-cache over io_uring")
    names = thread_names(daemon_pid(big))
    check(any(n.startswith("fuse-ring-") for n in names), f"no ring thread among {sorted(set(names))}")
    check("b2fs-worker" in names, f"no thread of the shared pool (long reads) among {sorted(set(names))}")
    check(any(n.startswith("b2fs-cpu") for n in names), f"no thread of a CPU's pool among {sorted(set(names))}")
    check(all(n for n in names), f"an unnamed thread: {names}")


def writes_commit(h):
    require_io_uring(h)
    frame = h.copy_fixture(FIXTURE)
    mnt, _ = mount_reporting(h, frame, ["-o", "io_uring=on"])
    with open(os.path.join(mnt, "vlmeta", "over_io_uring"), "wb") as f:
        f.write(b"committed from the pool")
        f.flush()
        os.fsync(f.fileno())
    data = bytearray(read_file(os.path.join(mnt, "data")))
    data[:8] = b"\x01" * 8
    with open(os.path.join(mnt, "data"), "r+b") as f:
        f.write(data[:8])
    h.unmount(mnt)
    again = h.mount(frame, ["-o", "ro"])
    check_equal(read_file(os.path.join(again, "vlmeta", "over_io_uring")), b"committed from the pool",
                "a vlmetalayer written over io_uring")
    check_equal(read_file(os.path.join(again, "data"))[:8], b"\x01" * 8, "data written over io_uring")


def stopped_while_busy(h):
    """SIGTERM while readers keep the pools busy: the daemon unmounts and exits 0."""
    require_io_uring(h)
    frames = make_frames(h)
    path = next(iter(frames))
    mnt = h.new_dir()
    log = os.path.join(h.workdir, "stopped.log")
    with open(log, "w") as err:
        daemon = h.start_foreground(["-o", "ro,io_uring=on,cache_size=4M", path], mnt, stderr=err)
    started = threading.Event()
    stop = threading.Event()

    def reader(seed):
        n = 0
        while not stop.is_set():
            try:
                fd = os.open(os.path.join(mnt, "data"), os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    os.pread(fd, 1 << 20, ((seed * 7 + n) % 16) << 20)
                finally:
                    os.close(fd)
            except OSError:
                return  # the mount went
            n += 1
            if n == 3:
                started.set()

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    try:
        check(started.wait(60), "the readers never got going")
        daemon.send_signal(signal.SIGTERM)
        try:
            status = daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
            raise TestFailure("the daemon did not exit within 60 s of SIGTERM with requests in its pools")
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    with open(log) as f:
        text = f.read()
    check_equal(status, 0, f"the daemon's exit status after SIGTERM (its log: {text[-800:]!r})")
    check(wait_until(lambda: not os.path.ismount(mnt)), "the mount is still there after the daemon exited")
    h.mounts.pop(mnt, None)


def main():
    h = Harness("FUSE over io_uring and its fallback", watchdog_seconds=300)
    h.require_fuse()
    h.test("the switch off: io_uring=auto falls back with one line, =on refuses, =off is quiet", fallback, h)
    h.test("over io_uring: every kind of file, readers in parallel, named pools", over_io_uring, h)
    h.test("over io_uring: writes commit from the pool", writes_commit, h)
    h.test("over io_uring: SIGTERM with requests in the pools", stopped_while_busy, h)
    h.finish()


if __name__ == "__main__":
    main()
