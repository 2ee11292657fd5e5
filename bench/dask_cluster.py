"""The dask rows of bench/run.sh: a SeaweedFS prefix (loopback) of four float64
arrays written by python-blosc2 (SIZE_MB/4 in all), mounted on every worker of
a dask.distributed LocalCluster by blosc2fs.dask.MountPlugin and reduced with
xarray (`xr.open_zarr` of the collection's Zarr group, one dask chunk per
b2nd chunk, `.sum().compute()` on the workers), with 1 and with 2 worker
processes of one thread each, against python-blosc2's own `sum()` of the same
files read from the local disk in this process (python-blosc2 has no signed-S3
reader). Every run is cold: page cache dropped, a fresh mount (the daemon's
chunk cache empty), no disk cache. The time is the reduction's alone (the
cluster is started and the plugin registered before the clock starts); the
sums must equal python-blosc2's. Prints markdown rows
"| what | blosc2fs | reference | — | target | verdict |".

    dask_cluster.py BLOSC2FS SCRATCH SIZE_MB RUNS
"""

import os
import shutil
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from remote import drop_caches, log, median  # noqa: E402
from remote_servers import SeaweedS3  # noqa: E402

import blosc2  # noqa: E402
import numpy as np  # noqa: E402
from bench_rows import print_rows, row, verdict  # noqa: E402

BINARY, SCRATCH, SIZE_MB, RUNS = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ACCESS_KEY, SECRET_KEY = "bench-key", "bench-secret-0123456789abcdef"
ARRAYS = 4
ROWS_PER_CHUNK = 256
COLUMNS = 2048

warnings.filterwarnings("ignore", message="Object at .* is not recognized as a component of a Zarr hierarchy")


def stage_package(work):
    """python/blosc2fs with the bench's daemon as _bin/blosc2fs (the wheel's
    layout), first on sys.path here and in the workers (PYTHONPATH)."""
    site = os.path.join(work, "package")
    shutil.copytree(os.path.join(HERE, "..", "python", "blosc2fs"), os.path.join(site, "blosc2fs"))
    os.makedirs(os.path.join(site, "blosc2fs", "_bin"))
    os.symlink(os.path.abspath(BINARY), os.path.join(site, "blosc2fs", "_bin", "blosc2fs"))
    sys.path.insert(0, site)
    os.environ["PYTHONPATH"] = site + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")


def make_arrays(folder):
    """ARRAYS float64 arrays of SIZE_MB/4/ARRAYS each: a smooth field plus noise, in
    steps of 1/4 (exact sums in any order; about 4.5 × compressed), chunks of
    ROWS_PER_CHUNK rows (4 MB: one dask chunk, one Zarr shard each)."""
    rows = max(ROWS_PER_CHUNK, (SIZE_MB // 4 // ARRAYS) * (1 << 20) // (8 * COLUMNS))
    rows -= rows % ROWS_PER_CHUNK
    if os.path.exists(os.path.join(folder, ".done")) and blosc2.open(os.path.join(folder, "a0.b2nd")).shape[0] == rows:
        return rows
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    rng = np.random.default_rng(52)
    y = np.arange(rows)[:, None]
    x = np.arange(COLUMNS)[None, :]
    for i in range(ARRAYS):
        field = np.round(400 * np.sin(y / 300 + i) * np.cos(x / 200)) / 4
        values = field + rng.integers(-4096, 4096, (rows, COLUMNS)) / 4
        blosc2.asarray(values, chunks=(ROWS_PER_CHUNK, COLUMNS), urlpath=os.path.join(folder, f"a{i}.b2nd"), mode="w")
    open(os.path.join(folder, ".done"), "w").close()
    return rows


def open_group(path, chunks):
    """Runs on a worker: the collection's Zarr group, one dask chunk per b2nd chunk."""
    import warnings

    import xarray as xr
    warnings.filterwarnings("ignore", message="Object at .* is not recognized as a component of a Zarr hierarchy")
    return xr.open_zarr(path, consolidated=False, chunks=chunks)


def cluster_times(s3, workers, mnt, chunks, want):
    from distributed import Client, LocalCluster
    from blosc2fs.dask import MountPlugin

    keys = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
    times = []
    cluster = LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, host="127.0.0.1",
                           dashboard_address=None, env=keys, silence_logs=40)
    try:
        with Client(cluster, timeout=300) as client:
            client.wait_for_workers(workers, timeout=300)
            plugin = MountPlugin("s3://bench/dask/", mnt, read_only=True, options={"s3_endpoint": s3.url})
            for _ in range(RUNS):
                drop_caches()
                client.register_plugin(plugin)  # a fresh mount: the daemon's cache starts empty
                ds = client.submit(open_group, mnt, chunks, pure=False).result(timeout=300)
                start = time.monotonic()
                sums = ds.sum().compute()
                times.append(time.monotonic() - start)
                got = {n: float(sums[n]) for n in want}
                if got != want:
                    raise RuntimeError(f"{workers} worker(s): sums {got} differ from python-blosc2's {want}")
                client.unregister_worker_plugin(plugin.name)  # the last worker out unmounts
    finally:
        cluster.close(timeout=300)
    return times


def main():
    work = os.path.join(SCRATCH, "dask-work")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    stage_package(work)
    folder = os.path.join(SCRATCH, "dask-arrays")
    rows = make_arrays(folder)
    names = sorted(n for n in os.listdir(folder) if n.endswith(".b2nd"))
    mb = sum(blosc2.open(os.path.join(folder, n)).nbytes for n in names) / 1e6
    stored = sum(os.path.getsize(os.path.join(folder, n)) for n in names) / 1e6
    python_times, want = [], {}
    for _ in range(RUNS):
        drop_caches()
        start = time.monotonic()
        want = {n: float(blosc2.open(os.path.join(folder, n)).sum()) for n in names}
        python_times.append(time.monotonic() - start)
    p = median(python_times)
    chunks = {f"dim0_{rows}": ROWS_PER_CHUNK, f"dim1_{COLUMNS}": COLUMNS}
    mnt = os.path.join(work, "mnt")
    with SeaweedS3(work, ACCESS_KEY, SECRET_KEY, volume_max=max(4, int(stored // 50) + 4)) as s3:
        s3.create_bucket("bench")
        log(f"putting {len(names)} arrays ({stored:.0f} MB stored, {mb:.0f} MB uncompressed) on SeaweedFS")
        s3.put_tree("bench", "dask", folder)
        by_workers = {}
        for workers in (1, 2):
            log(f"dask: xarray sum with {workers} worker(s)")
            by_workers[workers] = median(cluster_times(s3, workers, mnt, chunks, want))
    one, two = by_workers[1], by_workers[2]
    what = (f"dask: xarray `sum()` of an S3 prefix (SeaweedFS, loopback) of {len(names)} float64 arrays, "
            f"{mb:.0f} MB ({stored:.0f} MB stored), cold, MountPlugin on a LocalCluster")
    reference = f"python-blosc2 {blosc2.__version__} `sum()` of the local files, in-process {p:.2f}"
    # One worker against python-blosc2 is information: the path through S3, the
    # mount, zarr-python's shards and dask's tasks is not the library's (the
    # zarr group's dask row is "info" too). Two workers must beat one.
    row(f"{what}, 1 worker (s)", f"{one:.2f} ({p / one:.2f} × python-blosc2)", reference, "info", "info")
    row(f"{what}, 2 workers (s)", f"{two:.2f} ({one / two:.2f} × 1 worker)", reference, "< 1 worker",
        verdict(two < one))


if __name__ == "__main__":
    main()
    print_rows()
