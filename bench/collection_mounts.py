"""The collections rows of bench/run.sh: a local folder of 10,000 small
python-blosc2 arrays, each with a vlmetalayer, mounted as one collection
(mount time, `ls` of the root, `cat` of every dataset's vlmeta/NAME against
python-blosc2 opening each file and reading the same vlmetalayer in one
process, caches dropped before each, the daemon's RSS afterwards), and 1,000
datasets under a SeaweedFS prefix (mount time; the requests of reading one
dataset's array.npy against mounting it alone plus the listing). Prints
markdown rows "| what | blosc2fs | reference | — | target | verdict |".

    collection_mounts.py BLOSC2FS SCRATCH SIZE_MB RUNS
"""

import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from remote import drop_caches, log, median, mount, unmount  # noqa: E402
from remote_servers import SeaweedS3  # noqa: E402

import blosc2  # noqa: E402
import numpy as np  # noqa: E402
from bench_rows import print_rows, row, verdict  # noqa: E402

BINARY, SCRATCH, RUNS = sys.argv[1], sys.argv[2], int(sys.argv[4])
MANY = 10_000
REMOTE_MANY = 1_000
FOLDER = os.path.join(SCRATCH, "collection-10000")
MNT = os.path.join(SCRATCH, "collection-mnt")
ACCESS_KEY, SECRET_KEY = "bench-key", "bench-secret-0123456789abcdef"


def make_folder(folder=FOLDER, count=MANY):
    """`count` small arrays in `folder`, run00000.b2nd..., each with vlmeta["run"]
    (also the io_uring rows' collection, bench/io_uring.py)."""
    if os.path.exists(os.path.join(folder, ".done")):
        return
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    log(f"making {count} small arrays with a vlmetalayer in {folder}")
    for i in range(count):
        a = blosc2.asarray(np.arange(100, dtype="i4") + i, urlpath=os.path.join(folder, f"run{i:05d}.b2nd"), mode="w")
        a.vlmeta["run"] = f"run {i}"
    open(os.path.join(folder, ".done"), "w").close()


def daemon_rss_mb(mnt):
    """The RSS of the blosc2fs serving `mnt` (found by its command line)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if not argv or not argv[0].endswith(b"blosc2fs") or mnt.encode() not in argv:
                continue
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            continue
    return float("nan")


def local_rows():
    make_folder()
    names = sorted(n for n in os.listdir(FOLDER) if n.endswith(".b2nd"))
    mnt = os.path.join(MNT, "local")
    mounts, lss, cats, pys, rss = [], [], [], [], []
    for _ in range(RUNS):
        drop_caches()
        start = time.monotonic()
        mount(FOLDER, mnt, ["-o", "ro"])
        mounts.append(time.monotonic() - start)
        start = time.monotonic()
        subprocess.run(["ls", mnt], check=True, stdout=subprocess.DEVNULL)
        lss.append(time.monotonic() - start)
        unmount(mnt)
        drop_caches()
        mount(FOLDER, mnt, ["-o", "ro"])
        start = time.monotonic()
        # One cat reading every dataset's vlmeta/run, as a shell loop would.
        paths = [os.path.join(mnt, n, "vlmeta", "run") for n in names]
        for i in range(0, len(paths), 1000):
            subprocess.run(["cat"] + paths[i:i + 1000], check=True, stdout=subprocess.DEVNULL)
        cats.append(time.monotonic() - start)
        rss.append(daemon_rss_mb(mnt))
        unmount(mnt)
        drop_caches()
        start = time.monotonic()
        for n in names:
            array = blosc2.open(os.path.join(FOLDER, n))
            array.vlmeta["run"]
        pys.append(time.monotonic() - start)
    m, ls, c, p, r = median(mounts), median(lss), median(cats), median(pys), median(rss)
    row(f"collections: mount a local folder of {MANY} python-blosc2 arrays (s)", f"{m:.3f}", "—", "< 0.5 s",
        verdict(m < 0.5))
    row(f"collections: `ls` of that folder's root ({MANY} entries) after a cold mount (s)", f"{ls:.3f}", "—", "—", "—")
    row(f"collections: read every dataset's vlmeta/run (`cat` of {MANY} files, cold) (s)",
        f"{c:.2f} ({p / c:.2f} ×)", f"python-blosc2 {blosc2.__version__} opening each file for vlmeta['run'] {p:.2f}",
        "≥ 1 ×", verdict(c <= p))
    row("collections: the daemon's RSS after reading those (MB)", f"{r:.0f}", "—", "≤ 256 MB", verdict(r <= 256))


def s3_mount(s3, url, mnt, env):
    os.makedirs(mnt, exist_ok=True)
    r = subprocess.run([BINARY, "-o", f"s3_endpoint={s3.url}", url, mnt], env=env, capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"mount of {url}: {r.stderr.strip()}")


def requests_of(path, key):
    with open(path) as f:
        j = json.load(f)
    return (j["counters"] if key is None else j[key]["counters"])["requests"]


def remote_rows():
    work = os.path.join(SCRATCH, "collection-s3")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY)
    mnt = os.path.join(MNT, "s3")
    with SeaweedS3(work, ACCESS_KEY, SECRET_KEY) as s3:
        s3.create_bucket("bench")
        log(f"putting {REMOTE_MANY} datasets on SeaweedFS")
        names = sorted(n for n in os.listdir(FOLDER) if n.endswith(".b2nd"))[:REMOTE_MANY]
        for n in names:
            s3.put_object("bench", f"lake/{n}", os.path.join(FOLDER, n))
        mounts, listing, whole, alone = [], [], [], []
        one = names[REMOTE_MANY // 2]
        for _ in range(RUNS):
            start = time.monotonic()
            s3_mount(s3, "s3://bench/lake/", mnt, env)
            mounts.append(time.monotonic() - start)
            # The listing's requests: what the mount made before any dataset is read.
            listing.append(requests_of(os.path.join(mnt, "collection.json"), None))
            unmount(mnt)
            s3_mount(s3, "s3://bench/lake/", mnt, env)
            with open(os.path.join(mnt, one, "array.npy"), "rb") as f:
                f.read()
            whole.append(requests_of(os.path.join(mnt, "collection.json"), None))
            unmount(mnt)
            s3_mount(s3, f"s3://bench/lake/{one}", mnt, env)
            with open(os.path.join(mnt, "array.npy"), "rb") as f:
                f.read()
            alone.append(requests_of(os.path.join(mnt, "frame.json"), "source"))
            unmount(mnt)
    m, ls, w, a = median(mounts), median(listing), median(whole), median(alone)
    row(f"collections: mount an S3 prefix (SeaweedFS, loopback) of {REMOTE_MANY} datasets (s)", f"{m:.3f}", "—",
        "< 1 s", verdict(m < 1))
    row("collections: HTTP requests to read one dataset's array.npy in that collection",
        f"{w:.0f}", f"its mount alone {a:.0f} + the listing {ls:.0f}", "≤ alone + listing", verdict(w <= a + ls))


def main():
    local_rows()
    remote_rows()


if __name__ == "__main__":
    try:
        main()
    finally:
        unmount(os.path.join(MNT, "local"))
        unmount(os.path.join(MNT, "s3"))
    print_rows()
