"""The caterva2 rows of bench/run.sh: blosc2fs mounting a real Caterva2 server
(cat2-server of BUILD/venv-caterva2, on 127.0.0.1) beside python-blosc2's own
Caterva2 reader, C2Array[:], on the same server in the same run. Prints
markdown rows "| what | blosc2fs | reference | — | target | verdict |".

    caterva2.py BLOSC2FS SCRATCH SIZE_MB RUNS CATERVA2_BIN
"""

import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
CATERVA2_BIN = sys.argv.pop(5)  # remote.py reads argv[1:5]
from remote import drop_caches, log, make_array, median, mount, timed_read, unmount  # noqa: E402
from caterva2_server import Caterva2Server  # noqa: E402

import blosc2  # noqa: E402
from bench_rows import print_rows, row, verdict  # noqa: E402

BINARY, SCRATCH, RUNS = sys.argv[1], sys.argv[2], int(sys.argv[4])
BIG_MB = 256  # the figure, whatever --quick says
MANY = 10_000
STATE = os.path.join(SCRATCH, "caterva2-state")
MNT = os.path.join(SCRATCH, "caterva2-mnt")


def make_many(root, template):
    """MANY copies of one small dataset in 100 directories of 100."""
    if os.path.exists(os.path.join(root, "done")):
        return
    shutil.rmtree(root, ignore_errors=True)
    for i in range(MANY):
        d = os.path.join(root, f"d{i // 100:03d}")
        os.makedirs(d, exist_ok=True)
        shutil.copyfile(template, os.path.join(d, f"ds{i:05d}.b2nd"))
    open(os.path.join(root, "done"), "w").close()


def key_tree(mnt):
    """Every directory of the mount and each entry's attributes, without going into a dataset."""
    n = 0
    stack = [mnt]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for e in it:
                e.stat()
                n += 1
                if e.is_dir() and not e.name.endswith(".b2nd"):
                    stack.append(e.path)
    return n


def main():
    public = os.path.join(STATE, "public")
    os.makedirs(public, exist_ok=True)
    big = os.path.join(public, f"big-{BIG_MB}.b2nd")
    log(f"making the {BIG_MB} MB data set and {MANY} small datasets")
    make_array(big, BIG_MB)
    small = os.path.join(SCRATCH, "caterva2-small.b2nd")
    if not os.path.exists(small):
        blosc2.asarray(__import__("numpy").arange(100), urlpath=small, mode="w")
    many_state = os.path.join(SCRATCH, "caterva2-many-state")
    make_many(os.path.join(many_state, "public", "many"), small)
    mnt = os.path.join(MNT, "tree")
    with Caterva2Server(CATERVA2_BIN, os.path.join(SCRATCH, "caterva2-work"), STATE) as server:
        name = os.path.basename(big)
        ours, theirs, requests = [], [], []
        nbytes = 0
        for _ in range(RUNS):
            drop_caches()
            mount(f"caterva2+{server.url}/@public", mnt)
            seconds, nbytes = timed_read(os.path.join(mnt, name, "data"))
            ours.append(nbytes / seconds / 1e6)
            with open(os.path.join(mnt, "server.json")) as f:
                requests.append(__import__("json").load(f)["counters"]["requests"])
            unmount(mnt)
            drop_caches()
            start = time.monotonic()
            array = blosc2.open(blosc2.URLPath("@public/" + name, server.url))[:]
            seconds = time.monotonic() - start
            theirs.append(array.nbytes / seconds / 1e6)
            del array
        a, b = median(ours), median(theirs)
        row(f"caterva2: cold sequential `cat data` of a {BIG_MB} MB b2nd dataset from a loopback cat2-server (MB/s)",
            f"tree mount {a:.0f} ({a / b:.2f} ×); {median(requests):.0f} requests",
            f"python-blosc2 {blosc2.__version__} `C2Array[:]` (blosc2.open(URLPath)) {b:.0f}", "≥ 1 ×",
            verdict(a >= b))
    with Caterva2Server(CATERVA2_BIN, os.path.join(SCRATCH, "caterva2-work"), many_state) as server:
        mounts, lists = [], []
        entries = 0
        for _ in range(RUNS):
            drop_caches()
            start = time.monotonic()
            mount(f"caterva2+{server.url}/@public", mnt)
            mounts.append(time.monotonic() - start)
            start = time.monotonic()
            entries = key_tree(mnt)
            lists.append(time.monotonic() - start)
            unmount(mnt)
        m, ls = median(mounts), median(lists)
        row(f"caterva2: a root of {MANY} datasets in 100 directories: mount, then list the key tree with "
            "attributes (s)", f"mount {m:.2f} s, list {ls:.2f} s ({entries} entries)", "—", "mount < 1 s, list < 2 s",
            verdict(m < 1 and ls < 2))


if __name__ == "__main__":
    try:
        main()
    finally:
        unmount(os.path.join(MNT, "tree"))
    print_rows()
