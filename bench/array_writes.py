"""The array-writes rows of bench/run.sh: array.npy written as an array.

For each chunk size (python-blosc2's default chunks for the array on the running
CPU, and fixed 8 MiB and 64 MiB chunks of whole rows of the first axis):

- slab: a slab of at least 64 MiB covering whole chunks, assigned through
  np.lib.format.open_memmap(mode="r+") of a SIZE_MB float32 array and flush()ed
  (committed when it returns), against python-blosc2's `arr[a:b] = v`
  in-process on a copy of the same frame (and the same plus an fsync of its
  frame, the durability flush() gives);
- half slab: the same slab's chunks each written over half of their extent
  along the first axis whose chunk is longer than 1, slice by slice, against
  the same slices assigned by python-blosc2;
- pwrite: the same slab's bytes written into array.npy with pwrite, 1 MiB at a
  time, and fsynced (what `dd conv=notrunc,fsync` does): a memory map's write
  faults read every page in first, a pwrite reads nothing;
- cp: a SIZE_MB/2 .npy copied into array.npy (a whole replacement, committed
  at close) against blosc2.asarray(np.load(...), urlpath=...) with the same
  chunks, blocks and codec settings;
- the daemon's peak RSS during each (VmHWM of a fresh mount).

Prints markdown rows "| what | blosc2fs | reference | — | target | verdict |".

    array_writes.py BLOSC2FS SCRATCH SIZE_MB RUNS
"""

import os
import resource
import shutil
import subprocess
import sys
import time

import blosc2
import numpy as np
from bench_rows import ROWS, make_log, print_rows

log = make_log("array_writes")

BINARY, SCRATCH, SIZE_MB, RUNS = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
WORK = os.path.join(SCRATCH, "array-writes")
MNT = os.path.join(WORK, "mnt")
CPARAMS = {"codec": blosc2.Codec.ZSTD, "clevel": 1}
# Chunk sizes: python-blosc2's default for the array on this CPU, then fixed MiB.
LABELS = os.environ.get("ARRAY_WRITES_CHUNKS", "default,8,64").split(",")


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def content(shape, seed):
    """Float32 values that compress about as measured data does: a smooth field
    plus noise kept to 12 bits of mantissa."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape, dtype=np.float32)
    a += np.linspace(0, 100, shape[-1], dtype=np.float32)
    return (a.view(np.uint32) & np.uint32(0xFFFFF800)).view(np.float32)


DAEMON = {}  # the running mount's daemon pid


def mount(frame):
    os.makedirs(MNT, exist_ok=True)
    subprocess.run([BINARY, frame, MNT], check=True)
    pid = int(subprocess.run(["pgrep", "-n", "-f", f" {MNT}$"], capture_output=True, text=True,
                             check=True).stdout.split()[0])
    DAEMON["pid"] = pid
    return pid


def daemon_gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def unmount():
    """fusermount3 -u, then the daemon's exit: it commits what it still holds after
    the kernel lets the mount go, so the frame is whole only then (docs/writing.md,
    "Unmounting"). A busy mount (a file or memory map still open) is tried again
    for up to 30 s, and says so."""
    deadline = time.monotonic() + 30
    while True:
        r = subprocess.run(["fusermount3", "-u", MNT], capture_output=True, text=True)
        if r.returncode == 0:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"fusermount3 -u {MNT}: {r.stderr.strip()}")
        log(f"fusermount3 -u {MNT} failed ({r.stderr.strip()}); trying again")
        time.sleep(0.2)
    pid = DAEMON.pop("pid", None)
    while pid and not daemon_gone(pid):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the daemon {pid} of {MNT} did not exit")
        time.sleep(0.05)


def hwm_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid):
    """User + system CPU-seconds of a process so far (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def array_shape(size_mb):
    """256 rows of the first axis, each of rows of 1024 float32."""
    row_bytes = (size_mb << 20) // 256
    return (256, row_bytes // 4 // 1024, 1024)


def chunks_of(label, shape):
    """None for python-blosc2's defaults, else whole rows of the first axis making
    `label` MiB."""
    if label == "default":
        return None
    row_bytes = 4 * shape[1] * shape[2]
    return (max(1, (int(label) << 20) // row_bytes),) + shape[1:]


def slab_slices(shape, chunks):
    """The slab (rows start..stop: whole chunks, at least 64 MiB, from the middle), and
    the slices of its half-chunk variant."""
    row_bytes = 4 * shape[1] * shape[2]
    c0 = chunks[0]
    per_slab = max(c0, -(-(64 << 20) // row_bytes) // c0 * c0)
    per_slab = min(per_slab, shape[0] // c0 * c0)
    start = (shape[0] // 2) // c0 * c0
    start = min(start, shape[0] // c0 * c0 - per_slab)
    slab = (slice(start, start + per_slab),)
    axis = next((k for k, c in enumerate(chunks) if c > 1), 0)
    halves = []
    if axis == 0:
        for at in range(start, start + per_slab, c0):
            halves.append((slice(at, at + max(1, c0 // 2)),))
    else:
        ca = chunks[axis]
        for at in range(0, shape[axis], ca):
            halves.append((slice(start, start + per_slab),) + (slice(None),) * (axis - 1) +
                          (slice(at, min(shape[axis], at + max(1, ca // 2))),))
    return slab, halves


def region_shape(shape, region):
    return tuple(len(range(*sl.indices(n))) for sl, n in zip(region + (slice(None),) * (len(shape) - len(region)),
                                                             shape))


def write_slab(npy, shape, region, values):
    """The slab's bytes written where they lie in array.npy (rows of the first axis: one
    range), 1 MiB at a time as `dd bs=1M conv=notrunc` does, then fsynced: nothing is read
    in first, as a memory map's write faults must."""
    row_bytes = 4 * shape[1] * shape[2]
    fd = os.open(npy, os.O_WRONLY)
    try:
        with open(npy, "rb") as f:
            version = np.lib.format.read_magic(f)
            (np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0)(f)
            data_at = f.tell()
        data = memoryview(np.ascontiguousarray(values)).cast("B")
        at = data_at + region[0].start * row_bytes
        for k in range(0, len(data), 1 << 20):
            os.pwrite(fd, data[k:k + (1 << 20)], at + k)
        os.fsync(fd)
    finally:
        os.close(fd)


def settled_copy(base, frame):
    """A copy of the frame, on disk before either side starts: each side's fsync then
    syncs its own writes, not the half-gigabyte copy it started from (which made the
    mount's fsync 0.16 s longer than python-blosc2's, measured)."""
    shutil.copyfile(base, frame)
    fd = os.open(frame, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def slab_rows_for(label):
    """The slab and half-slab rows of one chunk size."""
    shape = array_shape(SIZE_MB)
    base = os.path.join(WORK, f"slab-{label}.b2nd")
    if not os.path.exists(base):
        log(f"making {base} {shape} float32, chunks {label}")
        blosc2.asarray(content(shape, 1), urlpath=base, mode="w", cparams=CPARAMS, chunks=chunks_of(label, shape))
    a = blosc2.open(base, mode="r")
    chunks = a.chunks
    slab, halves = slab_slices(shape, chunks)
    chunk_mib = np.prod(chunks) * 4 / (1 << 20)
    what = f"chunks {chunks} ({chunk_mib:.0f} MiB{', python-blosc2 default' if label == 'default' else ''})"
    for name, regions in (("slab", [slab]), ("half", halves), ("pwrite", [slab])):
        values = [content(region_shape(shape, r), 2 + k) for k, r in enumerate(regions)]
        ours, theirs, theirs_durable, rss = [], [], [], []
        for _ in range(RUNS):
            frame = os.path.join(WORK, "slab-run.b2nd")
            settled_copy(base, frame)
            pid = mount(frame)
            try:
                t = time.perf_counter()
                if name == "pwrite":
                    write_slab(os.path.join(MNT, "array.npy"), shape, regions[0], values[0])
                else:
                    m = np.lib.format.open_memmap(os.path.join(MNT, "array.npy"), mode="r+")
                    for r, v in zip(regions, values):
                        m[r] = v
                    m.flush()
                    del m
                ours.append(time.perf_counter() - t)
                rss.append(hwm_mb(pid))
            finally:
                unmount()
            settled_copy(base, frame)
            t = time.perf_counter()
            arr = blosc2.open(frame, mode="a")
            for r, v in zip(regions, values):
                arr[r] = v
            del arr
            theirs.append(time.perf_counter() - t)
            # flush() of the memory map is msync(MS_SYNC): the mount's commit is on disk when it
            # returns (an fsync); python-blosc2's assignment is not. The same durability for it:
            fd = os.open(frame, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
            theirs_durable.append(time.perf_counter() - t)
            os.unlink(frame)
        mib = sum(v.nbytes for v in values) / (1 << 20)
        o, r, d = median(ours), median(theirs), median(theirs_durable)
        kind = {"slab": "slab of whole chunks", "half": "half of each chunk of that slab",
                "pwrite": "the same slab"}[name]
        how = "pwrite in 1 MiB pieces + fsync (dd conv=notrunc,fsync)" if name == "pwrite" else "memmap"
        ROWS.append(f"| array.npy {how}, {what}: {mib:.0f} MiB, {kind}, of a {SIZE_MB} MB float32 array, "
                    f"assign + flush | {o:.2f} s | python-blosc2 arr[...] = v: {r:.2f} s; + fsync: {d:.2f} s | "
                    f"{median(rss):.0f} MB | ≥ 0.5x; ≥ 1x with fsync | "
                    f"{'PASS' if r / o >= 0.5 and d / o >= 1 else '**FAIL**'} ({r / o:.2f}x; {d / o:.2f}x) |")


def copy_in(label):
    shape = array_shape(SIZE_MB)
    shape = (shape[0] // 2,) + shape[1:]
    npy = os.path.join(WORK, "copy.npy")
    if not os.path.exists(npy):
        log(f"making {npy} {shape} float32")
        np.save(npy, content(shape, 3))
    base = os.path.join(WORK, f"copy-target-{label}.b2nd")
    if not os.path.exists(base):
        blosc2.asarray(content(shape, 4), urlpath=base, mode="w", cparams=CPARAMS, chunks=chunks_of(label, shape))
    a = blosc2.open(base, mode="r")
    chunks, blocks = a.chunks, a.blocks
    ours, theirs, rss, our_cpu, their_cpu = [], [], [], [], []
    for _ in range(RUNS):
        frame = os.path.join(WORK, "copy-run.b2nd")
        shutil.copyfile(base, frame)
        subprocess.run(["sync"], check=True)
        pid = mount(frame)
        try:
            cpu, cp_cpu = cpu_s(pid), children_cpu_s()
            t = time.perf_counter()
            subprocess.run(["cp", npy, os.path.join(MNT, "array.npy")], check=True)
            ours.append(time.perf_counter() - t)
            our_cpu.append(cpu_s(pid) - cpu + children_cpu_s() - cp_cpu)
            rss.append(hwm_mb(pid))
        finally:
            unmount()
        out = os.path.join(WORK, "copy-ref.b2nd")
        cpu = own_cpu_s()
        t = time.perf_counter()
        blosc2.asarray(np.load(npy), urlpath=out, mode="w", chunks=chunks, blocks=blocks, cparams=CPARAMS)
        # On disk as the mount's close leaves its frame (the file, then its directory, fsynced);
        # os.sync() would also wait for whatever else the machine had dirty.
        for path, flags in ((out, os.O_RDONLY), (WORK, os.O_RDONLY | os.O_DIRECTORY)):
            fd = os.open(path, flags)
            os.fsync(fd)
            os.close(fd)
        theirs.append(time.perf_counter() - t)
        their_cpu.append(own_cpu_s() - cpu)
        blosc2.remove_urlpath(out)
        os.unlink(frame)
    mb = os.path.getsize(npy) / 1e6
    o, r = median(ours), median(theirs)
    chunk_mib = np.prod(chunks) * 4 / (1 << 20)
    ROWS.append(f"| cp of a {mb:.0f} MB .npy into array.npy, chunks {chunks} ({chunk_mib:.0f} MiB"
                f"{', python-blosc2 default' if label == 'default' else ''}) (close commits) | {o:.2f} s | "
                f"blosc2.asarray(np.load(...), urlpath=...): {r:.2f} s | {median(rss):.0f} MB | ≥ 0.8x | "
                f"{'PASS' if r / o >= 0.8 else '**FAIL**'} ({r / o:.2f}x; CPU-s {median(our_cpu):.2f} daemon + cp, "
                f"{median(their_cpu):.2f} python-blosc2) |")


def main():
    os.makedirs(WORK, exist_ok=True)
    try:
        for label in LABELS:
            slab_rows_for(label)
            copy_in(label)
    finally:
        if os.path.ismount(MNT):
            subprocess.run(["fusermount3", "-u", MNT])
    print_rows()


if __name__ == "__main__":
    main()
