"""blosc2fs.dask (issue 52): a dask.distributed LocalCluster of worker processes
reads one SeaweedFS prefix through MountPlugin. Both workers share one mount
(one daemon, two holders); an xarray sum over the collection's Zarr group,
opened and reduced on the workers, equals python-blosc2's sum of the same
files; a worker killed with SIGKILL is replaced by its nanny, whose new worker
joins the mount; the mount, its daemon and its holders' file are gone once
the cluster closes. Failures in setup reach the client as MountError
subclasses with one line. Without a cluster: a mount whose holders were all
killed is adopted and unmounted by the next one out, and one whose daemon was
killed is mounted again. `import blosc2fs` imports no dask, and
`import blosc2fs.dask` without distributed says what to install.

The package is the source tree's python/blosc2fs, laid out as the wheel lays it
out (its daemon in _bin/: this build's), in the test's folder."""

import os
import shutil
import signal
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import Harness, TestFailure, check, check_equal, is_mounted, wait_until  # noqa: E402
from remote_servers import SeaweedS3  # noqa: E402

import blosc2  # noqa: E402
import numpy as np  # noqa: E402

ACCESS_KEY, SECRET_KEY = "dask-key", "dask-secret-0123456789abcdef"
BUCKET, PREFIX = "lake", "grid"
SHAPE, CHUNKS, BLOCKS = (600, 500), (200, 250), (100, 125)
NAMES = ("t0.b2nd", "t1.b2nd", "t2.b2nd")
# Starting a cluster of two processes, with NumPy, xarray and zarr imported in
# each, on a busy 2-core machine.
CLUSTER_PATIENCE = 180

warnings.filterwarnings("ignore", message="Object at .* is not recognized as a component of a Zarr hierarchy")


def stage_package(h):
    """python/blosc2fs with this build's daemon as _bin/blosc2fs, first on sys.path
    here and in the worker processes (PYTHONPATH)."""
    site = os.path.join(h.workdir, "package")
    package = os.path.join(site, "blosc2fs")
    shutil.copytree(os.path.join(HERE, "..", "..", "python", "blosc2fs"), package)
    os.makedirs(os.path.join(package, "_bin"))
    os.symlink(h.binary, os.path.join(package, "_bin", "blosc2fs"))
    sys.path.insert(0, site)
    os.environ["PYTHONPATH"] = site + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    import blosc2fs
    check(blosc2fs.__file__.startswith(package), f"blosc2fs from the staged package: {blosc2fs.__file__}")


def make_collection(h, s3):
    """Three float64 arrays of one shape under s3://lake/grid/; their values are
    multiples of 1/4, so any order of summing gives the same exact sum."""
    folder = h.new_dir("grid")
    rng = np.random.default_rng(52)
    for name in NAMES:
        values = rng.integers(-4000, 4000, SHAPE).astype("f8") / 4
        blosc2.asarray(values, chunks=CHUNKS, blocks=BLOCKS, urlpath=os.path.join(folder, name), mode="w")
    s3.create_bucket(BUCKET)
    s3.put_tree(BUCKET, PREFIX, folder)
    return folder


def registry_state(mnt):
    """(the holders' file, the lock file, what the holders' file holds or None)."""
    from blosc2fs.dask import _Registry
    r = _Registry(mnt, 10)
    return r.path, r.lock_path, r.read() if os.path.exists(r.path) else None


def daemons_of(h, mnt):
    """The pids of every blosc2fs process whose last argument is `mnt`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
                with open(f"/proc/{entry}/stat") as f:
                    zombie = f.read().rsplit(")", 1)[1].split()[0] in "ZX"
            except OSError:
                continue
            if len(argv) >= 3 and argv[-2] == mnt.encode() and argv[0].endswith(b"blosc2fs") and not zombie:
                found.append(int(entry))
    return found


def live_holders(mnt):
    from blosc2fs._mount import process_start
    _, _, state = registry_state(mnt)
    return [hd for hd in (state or {}).get("holders", []) if process_start(hd["pid"]) == hd["start"]]


def pids_of_workers(client):
    """The workers' pids, sorted; None while the scheduler still counts a dead one
    (client.run fails with CommClosedError then)."""
    try:
        return sorted(client.run(os.getpid, wait=True).values())
    except Exception:
        return None


def open_group(path):
    """Runs on a worker: the collection's Zarr group as an xarray Dataset (dask-backed)."""
    import warnings

    import xarray as xr
    warnings.filterwarnings("ignore", message="Object at .* is not recognized as a component of a Zarr hierarchy")
    return xr.open_zarr(path, consolidated=False)


def import_guard(h):
    code = ("import sys; import blosc2fs; "
            "assert not any(m == 'dask' or m.startswith(('dask.', 'distributed')) for m in sys.modules), "
            "sorted(m for m in sys.modules if 'dask' in m or 'distributed' in m)\n"
            "sys.modules['distributed'] = None  # as if it were not installed\n"
            "try:\n    import blosc2fs.dask\nexcept ImportError as e:\n    print(e)\nelse:\n    print('imported')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ)
    check_equal(r.returncode, 0, f"import blosc2fs imports dask or distributed: {r.stderr.strip()}")
    line = r.stdout.strip()
    check("pip install distributed" in line and "blosc2fs[dask]" in line, f"the ImportError says what to install: {line!r}")
    print(f"  {line}", flush=True)


def cluster_reads_one_prefix(h, s3):
    from distributed import Client, LocalCluster, get_task_stream
    import blosc2fs
    from blosc2fs.dask import MountPlugin

    folder = make_collection(h, s3)
    want = {name: blosc2.open(os.path.join(folder, name)).sum() for name in NAMES}
    want_max = {name: blosc2.open(os.path.join(folder, name)).max() for name in NAMES}
    mnt = os.path.join(h.workdir, "cluster", "lake")  # made by the plugin (its parent too)
    check(not os.path.exists(mnt), "the mount point does not exist yet")
    # The keys reach the daemon through the workers' environment only: this process has none.
    check("AWS_SECRET_ACCESS_KEY" not in os.environ, "no keys in the test's own environment")
    keys = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
    started = time.monotonic()
    cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                           dashboard_address=None, env=keys, silence_logs=40)
    try:
        client = Client(cluster, timeout=CLUSTER_PATIENCE)
        client.wait_for_workers(2, timeout=CLUSTER_PATIENCE)
        print(f"  a LocalCluster of 2 worker processes in {time.monotonic() - started:.1f} s", flush=True)
        plugin = MountPlugin(f"s3://{BUCKET}/{PREFIX}/", mnt, read_only=True, options={"s3_endpoint": s3.url})
        check(SECRET_KEY not in repr(plugin) and ACCESS_KEY not in repr(plugin), f"keys in repr: {plugin!r}")
        client.register_plugin(plugin)
        h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)  # unmounted by the harness if a check below fails
        check(is_mounted(mnt), f"{mnt} is mounted")
        daemons = daemons_of(h, mnt)
        check_equal(len(daemons), 1, f"blosc2fs daemons serving {mnt} (one per host)")
        with open(f"/proc/{daemons[0]}/cmdline", "rb") as f:
            check(SECRET_KEY.encode() not in f.read(), "no key on the daemon's command line")
        worker_pids = pids_of_workers(client)
        check(os.getpid() not in worker_pids, "the workers are processes of their own")
        with open(f"/proc/{daemons[0]}/stat") as f:
            parent = int(f.read().rsplit(")", 1)[1].split()[1])
        check(parent not in worker_pids, "the daemon is no worker's child: a worker's death leaves it serving")
        path, _, state = registry_state(mnt)
        check_equal(sorted(hd["pid"] for hd in state["holders"]), worker_pids, "the holders are the two workers")
        with open(path) as f:
            text = f.read()
        check(SECRET_KEY not in text and ACCESS_KEY not in text, "no keys in the holders' file")

        # Opened and reduced on the workers: the client gets back a lazy Dataset.
        ds = client.submit(open_group, mnt, pure=False).result(timeout=CLUSTER_PATIENCE)
        check_equal(sorted(ds.data_vars), sorted(NAMES), "the group's variables")
        with get_task_stream(client) as stream:
            sums = ds.sum().compute()
            maxima = ds.max().compute()
        for name in NAMES:
            check_equal(float(sums[name]), float(want[name]), f"xarray sum of {name} on the workers vs python-blosc2")
            check_equal(float(maxima[name]), float(want_max[name]), f"xarray max of {name} vs python-blosc2")
        ran_on = {t["worker"] for t in stream.data}
        check(ran_on and ran_on <= set(client.scheduler_info()["workers"]), f"tasks ran on {ran_on}")
        print(f"  sum and max of {len(NAMES)} arrays in {len(stream.data)} tasks on {len(ran_on)} worker(s): "
              f"{ {n: float(sums[n]) for n in NAMES} }", flush=True)

        # A worker killed: the mount stays for the other; its nanny's new worker joins.
        victim = worker_pids[0]
        os.kill(victim, signal.SIGKILL)
        check(wait_until(lambda: (pids_of_workers(client) or [victim])[0] != victim
                         and len(pids_of_workers(client) or []) == 2 and victim not in pids_of_workers(client),
                         CLUSTER_PATIENCE, interval=0.5),
              "the nanny started a new worker")
        new_pids = pids_of_workers(client)
        check(wait_until(lambda: sorted(hd["pid"] for hd in live_holders(mnt)) == new_pids, CLUSTER_PATIENCE,
                         interval=0.2),
              f"the live holders are the workers {new_pids}: {live_holders(mnt)}")
        check_equal(daemons_of(h, mnt), daemons, "the same daemon serves the mount")
        again = client.compute(ds["t1.b2nd"].sum()).result(timeout=CLUSTER_PATIENCE)
        check_equal(float(again), float(want["t1.b2nd"]), "the sum after a worker was killed")

        # Setup failures reach the client as the package's exceptions, one line each.
        other = os.path.join(h.workdir, "cluster", "other")
        taken = h.mount(os.path.join(folder, "t0.b2nd"), ["-o", "ro"])  # another blosc2fs mount
        for bad, cls in ((MountPlugin(f"s3://{BUCKET}/{PREFIX}/", other, options={"no_such_option": 1}),
                          blosc2fs.UsageError),
                         (MountPlugin(f"s3://{BUCKET}/{PREFIX}/", taken, options={"s3_endpoint": s3.url}),
                          blosc2fs.MountPointUnusable)):
            try:
                client.register_plugin(bad)
            except blosc2fs.MountError as e:
                check(isinstance(e, cls), f"{bad!r}: {type(e).__name__}, want {cls.__name__}: {e}")
                check("\n" not in str(e) and str(e).startswith("blosc2fs: "), f"one line: {str(e)!r}")
                print(f"  {type(e).__name__} (status {e.status}): {e}", flush=True)
            else:
                raise TestFailure(f"{bad!r} was registered")
            client.unregister_worker_plugin(bad.name)
        check(not os.path.exists(other), "the failed plugin's mount point is removed")
        check(not any(os.path.exists(p) for p in registry_state(other)[:2]), "no holders' file for a failed mount")
        check_equal(len(daemons_of(h, taken)), 1, "the other mount is left as it was")
        h.unmount(taken)
        check(is_mounted(mnt) and daemons_of(h, mnt) == daemons, "the first mount is still served")
        client.close()
    finally:
        cluster.close(timeout=CLUSTER_PATIENCE)
    check(wait_until(lambda: not is_mounted(mnt), 60), f"{mnt} unmounted once the cluster closed")
    h.mounts.pop(mnt, None)
    check(wait_until(lambda: not daemons_of(h, mnt), 60), "the daemon exited")
    check(not any(os.path.exists(p) for p in registry_state(mnt)[:2]), "the holders' and lock files are removed")
    check(not os.path.exists(mnt), "the mount point the plugin made is removed")


HOLDER = """
import os, sys, time
from blosc2fs.dask import MountPlugin
MountPlugin(sys.argv[1], sys.argv[2], read_only=True, options={"s3_endpoint": sys.argv[3]}).join("holder")
print("joined", flush=True)
time.sleep(600)
"""


def killed_holders_and_daemon(h, s3):
    """Without dask: processes holding the mount are all SIGKILLed; the mount
    stays served, the next plugin on the path adopts it, and its leave()
    unmounts it. A daemon SIGKILLed under its holders is mounted again by the
    next join."""
    from blosc2fs.dask import MountPlugin
    url = f"s3://{BUCKET}/{PREFIX}/"
    mnt = h.new_dir("killed")
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY)
    holders = []
    try:
        for _ in range(2):
            p = subprocess.Popen([sys.executable, "-c", HOLDER, url, mnt, s3.url], env=env, stdout=subprocess.PIPE,
                                 text=True)
            holders.append(p)
            check_equal(p.stdout.readline().strip(), "joined", "a holder process joined")
        h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
        daemons = daemons_of(h, mnt)
        check_equal(len(daemons), 1, "one daemon for two holders")
    finally:
        for p in holders:
            p.kill()
            p.wait(timeout=60)
    check(is_mounted(mnt) and os.listdir(mnt), "the mount is still served with every holder killed")
    os.environ.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY)
    try:
        plugin = MountPlugin(url, mnt, read_only=True, options={"s3_endpoint": s3.url})
        plugin.join("adopter")
        check_equal(daemons_of(h, mnt), daemons, "adopted, not mounted again")
        check_equal([hd["worker"] for hd in live_holders(mnt)], ["adopter"], "the dead holders are dropped")
        # The daemon killed under a live holder: the next join mounts again.
        os.kill(daemons[0], signal.SIGKILL)
        check(wait_until(lambda: not daemons_of(h, mnt), 30), "the daemon was killed")
        second = MountPlugin(url, mnt, read_only=True, options={"s3_endpoint": s3.url})
        second.join("second")
        check(set(os.listdir(mnt)) >= set(NAMES), f"mounted again: {os.listdir(mnt)}")
        h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
        check_equal(len(daemons_of(h, mnt)), 1, "one new daemon")
        check_equal(sorted(hd["worker"] for hd in live_holders(mnt)), ["adopter", "second"], "both hold it")
        plugin.leave()
        check(is_mounted(mnt), "still mounted for the second holder")
        second.leave()
        check(not is_mounted(mnt), "unmounted by the last one out")
        h.mounts.pop(mnt, None)
        check(wait_until(lambda: not daemons_of(h, mnt), 60), "the daemon exited")
        check(not any(os.path.exists(p) for p in registry_state(mnt)[:2]), "the holders' and lock files are removed")
    finally:
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            os.environ.pop(key, None)


def main():
    h = Harness("dask", watchdog_seconds=600)
    h.require_fuse()
    stage_package(h)
    h.test("import blosc2fs imports no dask; import blosc2fs.dask without distributed says what to install",
           import_guard, h)
    try:
        s3 = SeaweedS3(h.workdir, ACCESS_KEY, SECRET_KEY)
    except RuntimeError as e:
        print(f"cannot run the S3 tests: {e}", flush=True)
        h.failed += 1
        h.finish()
    with s3:
        h.test("a LocalCluster of 2 worker processes: one mount, xarray's sum on the workers == python-blosc2's, "
               "a killed worker replaced and joined, setup errors in the client, nothing left at close",
               cluster_reads_one_prefix, h, s3)
        h.test("holders all killed: the mount is adopted and unmounted by the last one out; a killed daemon is "
               "mounted again", killed_holders_and_daemon, h, s3)
    h.finish()


if __name__ == "__main__":
    main()
