"""The remote-slices rows of bench/run.sh (issue 52): sub-arrays of a remote
8,000 x 8,000 float32 array (chunks 1,000^2, blocks 100 x 1,000) read through
blosc2fs's Zarr view by zarr-python, against python-blosc2 opening the same
URL lazily, each read on a fresh mount with the page cache dropped. Bytes and
requests come from the server's own access log (nginx), or from a forwarding
proxy in front of SeaweedFS's S3 (SeaweedFS logs no requests); the same reads
through a loopback proxy that adds 20 ms to every request; and `array.npy`
read through a memory map, for reference. Prints markdown rows
"| what | blosc2fs | reference | — | target | verdict |".

    remote_slices.py BLOSC2FS SCRATCH SIZE_MB RUNS

The mount's own requests (the frame's header and index, fetched once per
mount) are not counted against a read; python-blosc2's open is, as it is part
of each of its reads.
"""

import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from remote_servers import FaultProxy, Nginx, SeaweedS3  # noqa: E402

import blosc2  # noqa: E402
import numpy as np  # noqa: E402
import zarr  # noqa: E402
from bench_rows import make_log, print_rows, row, verdict  # noqa: E402

log = make_log("bench remote-slices")

BINARY, SCRATCH, RUNS = sys.argv[1], sys.argv[2], max(int(sys.argv[4]), 3)
DATA = os.path.join(SCRATCH, "remote-slices")
MNT = os.path.join(SCRATCH, "remote-slices-mnt")
NAME = "slices-8000.b2nd"
S3_KEYS = {"AWS_ACCESS_KEY_ID": "benchkey", "AWS_SECRET_ACCESS_KEY": "benchsecret-0123456789"}
READS = {
    "`[4000:4100, 4000:4100]`": (slice(4000, 4100), slice(4000, 4100)),
    "`[:, 4500]`": (slice(None), 4500),
    "`[4000:4100, :]`": (slice(4000, 4100), slice(None)),
    "whole `[:]`": (slice(None), slice(None)),
}


def make_array(path):
    """A cumulative random walk along rows: compresses about 1.3 times, like measured data."""
    if os.path.exists(path):
        return
    rng = np.random.default_rng(5)
    out = blosc2.empty((8000, 8000), dtype="f4", chunks=(1000, 1000), blocks=(100, 1000), urlpath=path + ".tmp",
                       mode="w")
    for r in range(0, 8000, 1000):
        out[r:r + 1000] = np.cumsum(rng.standard_normal((1000, 8000)), axis=1).astype("f4")
    del out
    os.rename(path + ".tmp", path)


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")


def mount(url, options=(), env=None):
    os.makedirs(MNT, exist_ok=True)
    r = subprocess.run([BINARY] + list(options) + [url, MNT], capture_output=True, text=True, timeout=300, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"mount {url}: {r.stderr.strip()}")


def unmount():
    if os.path.ismount(MNT):
        if subprocess.run(["fusermount3", "-u", MNT], capture_output=True).returncode != 0:
            subprocess.run(["fusermount3", "-u", "-z", MNT], capture_output=True)


class Counter:
    """Requests and body bytes so far, from nginx's access log or a proxy's counts."""

    def __init__(self, nginx=None, proxy=None):
        self.nginx, self.proxy = nginx, proxy

    def now(self):
        if self.nginx is not None:
            r = self.nginx.requests()
            return len(r), sum(x["bytes"] for x in r)
        return self.proxy.count, self.proxy.bytes


def measure(url, selection, want, counter, options=(), env=None, npy=False):
    """(seconds, requests, bytes) of blosc2fs's read and of python-blosc2's, medians of RUNS."""
    ours, theirs = [], []
    for _ in range(RUNS):
        drop_caches()
        mount(url, options, env)
        try:
            n0, b0 = counter.now()
            start = time.perf_counter()
            if npy:
                got = np.array(np.load(os.path.join(MNT, "array.npy"), mmap_mode="r")[selection])
            else:
                got = zarr.open_array(MNT, mode="r")[selection]
            took = time.perf_counter() - start
            n1, b1 = counter.now()
        finally:
            unmount()
        if not np.array_equal(got, want):
            raise RuntimeError(f"{url}{selection}: blosc2fs read other values than python-blosc2's local read")
        ours.append((took, n1 - n0, b1 - b0))
        if npy:
            continue
        drop_caches()
        n0, b0 = counter.now()
        start = time.perf_counter()
        theirs_got = blosc2.open(url if env is None else http_url_of(url), mode="r")[selection]
        took = time.perf_counter() - start
        n1, b1 = counter.now()
        if not np.array_equal(theirs_got, want):
            raise RuntimeError(f"{url}{selection}: python-blosc2's remote read differs from its local read")
        theirs.append((took, n1 - n0, b1 - b0))

    def med(runs):
        return tuple(statistics.median(r[k] for r in runs) for k in range(3)) if runs else None
    return med(ours), med(theirs)


HTTP_OF_S3 = {}


def http_url_of(url):
    return HTTP_OF_S3[url]


def text(m):
    return f"{m[2] / 1e6:.2f} MB, {m[1]:.0f} requests, {m[0] * 1e3:.0f} ms"


def slice_rows(where, url, counter, local, options=(), env=None, time_target=1.25, bytes_rows=True):
    for label, selection in READS.items():
        want = local[selection]
        ours, theirs = measure(url, selection, want, counter, options, env)
        log(f"{where} {label}: blosc2fs {text(ours)}; python-blosc2 {text(theirs)}")
        whole = label.startswith("whole")
        bytes_ratio = ours[2] / theirs[2] if theirs[2] else float("inf")
        time_ratio = ours[0] / theirs[0] if theirs[0] else float("inf")
        if bytes_rows:
            row(f"remote slices, {where}: {label} bytes, Zarr view via zarr-python / python-blosc2 {blosc2.__version__}",
                text(ours), f"{text(theirs)}: {bytes_ratio:.2f} ×", "≤ 1.1 ×", verdict(bytes_ratio <= 1.1))
        row(f"remote slices, {where}: {label} time, Zarr view via zarr-python / python-blosc2",
            f"{ours[0] * 1e3:.0f} ms", f"{theirs[0] * 1e3:.0f} ms: {time_ratio:.2f} ×",
            "info" if whole else f"≤ {time_target} ×", "info" if whole else verdict(time_ratio <= time_target))


def main():
    os.makedirs(DATA, exist_ok=True)
    path = os.path.join(DATA, NAME)
    make_array(path)
    local = blosc2.open(path, mode="r")[:]
    log(f"{NAME}: {os.path.getsize(path) / 1e6:.1f} MB stored; load average {os.getloadavg()[0]:.1f}")
    try:
        with Nginx(DATA, os.path.join(SCRATCH, "remote-slices-nginx")) as nginx:
            url = f"{nginx.url}/{NAME}"
            slice_rows("nginx", url, Counter(nginx=nginx), local)
            with FaultProxy(nginx.port, delay=0.02) as slow:
                slice_rows("nginx behind a 20 ms proxy", f"{slow.url}/{NAME}", Counter(nginx=nginx), local,
                           time_target=1.0, bytes_rows=False)
            for label, selection in list(READS.items())[:3]:
                ours, _ = measure(url, selection, local[selection], Counter(nginx=nginx), npy=True)
                log(f"nginx array.npy {label}: {text(ours)}")
                row(f"remote slices, nginx: {label} through a memory map of array.npy (the kernel's read-around)",
                    text(ours), "—", "info", "info")
        weed_dir = os.path.join(SCRATCH, "remote-slices-seaweedfs")
        subprocess.run(["rm", "-rf", weed_dir])
        os.makedirs(weed_dir)
        env = dict(os.environ, **S3_KEYS)
        with SeaweedS3(weed_dir, S3_KEYS["AWS_ACCESS_KEY_ID"], S3_KEYS["AWS_SECRET_ACCESS_KEY"],
                       volume_max=os.path.getsize(path) // (64 << 20) + 8, anonymous_read=True) as weed:
            weed.create_bucket("bench")
            weed.put_object("bench", NAME, path)
            # Both readers through one counting proxy: SeaweedFS logs no requests.
            with FaultProxy(weed.port) as counted:
                s3_url = f"s3://bench/{NAME}"
                HTTP_OF_S3[s3_url] = f"{counted.url}/bench/{NAME}"  # python-blosc2 has no SigV4 reader
                slice_rows("SeaweedFS S3", s3_url, Counter(proxy=counted), local,
                           options=["-o", f"s3_endpoint={counted.url}"], env=env)
    finally:
        unmount()
    print_rows()


if __name__ == "__main__":
    main()
