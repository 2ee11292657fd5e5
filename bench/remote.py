"""The remote rows of bench/run.sh: blosc2fs mounting URLs served by a local nginx
(and, with 20 ms added to every request, by the delaying proxy of the tests),
beside a local mount of the same file, a reader fetching one chunk at a time,
and python-blosc2's own lazy remote reader; and a frame that compresses less
than 2x (noisy float32) read from nginx, from SeaweedFS's S3 and from a warm
disk cache, each against the local mount of the same file in the same rounds,
with `cat raw/*` both ways and curl's whole-object fetch. Prints markdown rows
"| what | blosc2fs | reference | — | target | verdict |".

    remote.py BLOSC2FS SCRATCH SIZE_MB RUNS [MKFRAME]

BLOSC2FS_BENCH_REMOTE=classic|noisy (comma-separated) measures those rows alone.
"""

import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from remote_servers import FaultProxy, Nginx, SeaweedS3  # noqa: E402

import blosc2  # noqa: E402
import numpy as np  # noqa: E402
from bench_rows import make_log, print_rows, row, verdict  # noqa: E402

log = make_log("bench remote")

BINARY, SCRATCH, SIZE_MB, RUNS = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
MKFRAME = sys.argv[5] if len(sys.argv) > 5 else os.path.join(os.path.dirname(BINARY), "..", "..", "bench", "mkframe")
PARTS = os.environ.get("BLOSC2FS_BENCH_REMOTE", "classic,noisy").split(",")
DATA = os.path.join(SCRATCH, "remote")
MNT = os.path.join(SCRATCH, "remote-mnt")


def make_array(path, mb, chunk_rows=512):
    """A 2-D f8 array of `mb` MB, chunks of `chunk_rows` rows of 8 KiB (512: 4 MiB),
    that compresses about 3 times."""
    if os.path.exists(path):
        return
    rows = mb * 1024 * 1024 // 8 // 1024
    rng = np.random.default_rng(11)
    out = blosc2.empty((rows, 1024), dtype="f8", chunks=(chunk_rows, 1024), blocks=(min(64, chunk_rows), 1024),
                       urlpath=path + ".tmp", mode="w")
    for start in range(0, rows, 512):
        n = min(512, rows - start)
        out[start:start + n] = np.round(rng.normal(100, 10, size=(n, 1024)), 2)
    del out
    os.rename(path + ".tmp", path)
    os.chmod(path, 0o644)


def make_store(path, leaves, mb_each):
    """Leaves of 4 MiB chunks, whatever python-blosc2 would pick on this CPU: its
    defaults made one 32 MiB chunk per leaf on a Xeon VM (2026-11-29), and 16
    readers each holding a decoded 32 MiB chunk are 512 MB before any cache."""
    if os.path.exists(path):
        return
    rng = np.random.default_rng(5)
    with blosc2.TreeStore(path + ".tmp.b2z", mode="w", threshold=1024) as s:
        for k in range(leaves):
            rows = mb_each * 1024 * 1024 // 8 // 1024
            s[f"/leaf{k:02d}"] = blosc2.asarray(np.round(rng.normal(0, 1, size=(rows, 1024)), 2), chunks=(512, 1024),
                                                blocks=(64, 1024))
    os.rename(path + ".tmp.b2z", path)
    os.chmod(path, 0o644)


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")


def mount(frame, mnt, options=(), env=None):
    os.makedirs(mnt, exist_ok=True)
    r = subprocess.run([BINARY] + list(options) + [frame, mnt], capture_output=True, text=True, timeout=300,
                       env=env)
    if r.returncode != 0:
        raise RuntimeError(f"mount {frame}: {r.stderr.strip()}")


def unmount(mnt):
    if os.path.ismount(mnt):
        if subprocess.run(["fusermount3", "-u", mnt], capture_output=True).returncode != 0:
            subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)


def timed_read(path, piece=1 << 20):
    start = time.monotonic()
    n = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(piece)
            if not b:
                break
            n += len(b)
    return time.monotonic() - start, n


def source(mnt):
    with open(os.path.join(mnt, "frame.json")) as f:
        return json.load(f)["source"]["counters"]


def median(values):
    return statistics.median(values) if values else float("nan")


def chunk_extents(local_mnt):
    """(offset, cbytes) of each stored chunk, from index.tsv of a local mount."""
    with open(os.path.join(local_mnt, "index.tsv")) as f:
        header = f.readline().rstrip("\n").split("\t")
        out = []
        for line in f:
            cells = dict(zip(header, line.rstrip("\n").split("\t")))
            if cells["special"] == "none":
                out.append((int(cells["index_entry"]), int(cells["cbytes"])))
    with open(os.path.join(local_mnt, "frame.json")) as f:
        header_len = json.load(f)["header_len"]
    return [(header_len + o, c) for o, c in out]


def one_chunk_at_a_time(port, name, extents):
    """A reader that fetches each chunk with one range request, in order, one in flight."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    start = time.monotonic()
    total = 0
    for offset, cbytes in extents:
        conn.request("GET", "/" + name, headers={"Range": f"bytes={offset}-{offset + cbytes - 1}"})
        r = conn.getresponse()
        total += len(r.read())
    conn.close()
    return time.monotonic() - start, total


def classic_rows(nginx, local_mnt, remote_mnt):
    big = os.path.join(DATA, f"seq-{SIZE_MB}.b2nd")
    small_mb = max(64, SIZE_MB // 4)
    small = os.path.join(DATA, f"delay-{small_mb}-256k.b2nd")
    store = os.path.join(DATA, "sixteen-4m.b2z")
    log(f"making {big}, {small} and {store} (once)")
    make_array(big, SIZE_MB)
    make_array(small, small_mb, chunk_rows=32)  # 256 KiB chunks: latency, not bandwidth, counts
    make_store(store, 16, max(8, SIZE_MB // 32))
    url = f"{nginx.url}/{os.path.basename(big)}"
    # Cold sequential read: local mount and URL mount of the same file.
    local_t, remote_t, mount_requests, mount_s = [], [], [], []
    for _ in range(RUNS):
        drop_caches()
        mount(big, local_mnt, ["-o", "ro"])
        t, n = timed_read(os.path.join(local_mnt, "data"))
        local_t.append(n / t / 1e6)
        unmount(local_mnt)
        drop_caches()
        before = len(nginx.requests())
        start = time.monotonic()
        mount(url, remote_mnt)
        mount_s.append(time.monotonic() - start)
        mount_requests.append(len(nginx.requests()) - before)
        t, n = timed_read(os.path.join(remote_mnt, "data"))
        remote_t.append(n / t / 1e6)
        counters = source(remote_mnt)
        unmount(remote_mnt)
    lm, rm = median(local_t), median(remote_t)
    row(f"remote: cold sequential `cat data` of a {SIZE_MB} MB b2nd frame from loopback nginx (MB/s)",
        f"URL mount {rm:.0f} ({rm / lm:.2f} ×); {counters['requests']} requests, "
        f"{counters['bytes_fetched'] / 1e6:.0f} MB, {counters['prefetches']} prefetched extents",
        f"local mount of the same file {lm:.0f}", "≥ 0.7 × the local mount", verdict(rm >= 0.7 * lm))
    row(f"remote: mounting the {SIZE_MB} MB frame's URL: time until the mount answers (s), requests",
        f"{median(mount_s):.3f} s, {max(mount_requests)} requests", "—", "≤ 2 requests",
        verdict(max(mount_requests) <= 2))
    # Warm disk cache: a remount reads the whole frame without data requests.
    cache = os.path.join(SCRATCH, "remote-cache")
    subprocess.run(["rm", "-rf", cache])
    opts = ["-o", f"cache_dir={cache},cache_dir_size={2 * SIZE_MB + 64}M"]
    mount(url, remote_mnt, opts)
    timed_read(os.path.join(remote_mnt, "data"))
    unmount(remote_mnt)
    drop_caches()
    before = len(nginx.requests())
    mount(url, remote_mnt, opts)
    at_mount = len(nginx.requests()) - before
    t, n = timed_read(os.path.join(remote_mnt, "data"))
    warm = source(remote_mnt)
    unmount(remote_mnt)
    data_requests = len(nginx.requests()) - before - at_mount
    row("remote: remount with a warm `cache_dir`, whole `cat data`: data requests (MB/s)",
        f"{data_requests} data requests ({at_mount} at mount, pinning the identity); {n / t / 1e6:.0f} MB/s; "
        f"{warm['disk_cache_hits']} disk-cache hits", "—", "0 data requests", verdict(data_requests == 0))

    # 20 ms per request: our sequential read, one chunk at a time, python-blosc2.
    name = os.path.basename(small)
    mount(small, local_mnt, ["-o", "ro"])
    extents = chunk_extents(local_mnt)
    unmount(local_mnt)
    with FaultProxy(nginx.port, delay=0.020) as proxy:
        ours, single, theirs = [], [], []
        for _ in range(RUNS):
            drop_caches()
            proxy.count = 0
            mount(f"{proxy.url}/{name}", remote_mnt)
            t, n = timed_read(os.path.join(remote_mnt, "data"))
            ours.append(n / t / 1e6)
            ours_counters, ours_proxy = source(remote_mnt), proxy.count
            unmount(remote_mnt)
            t1, _ = one_chunk_at_a_time(proxy.port, name, extents)
            single.append(n / t1 / 1e6)
            proxy.count, proxy.bytes = 0, 0
            start = time.monotonic()
            arr = blosc2.open(f"{proxy.url}/{name}", mode="r", lazy=True)[:]
            t2 = time.monotonic() - start
            theirs.append(arr.nbytes / t2 / 1e6)
            theirs_requests, theirs_bytes = proxy.count, proxy.bytes
            del arr
        o, s1, p = median(ours), median(single), median(theirs)
        row(f"remote: sequential read of a {small_mb} MB frame of 256 KiB chunks, 20 ms added to every "
            "request (MB/s)",
            f"URL mount {o:.0f}: {ours_proxy} requests, {ours_counters['bytes_fetched'] / 1e6:.0f} MB",
            f"one chunk at a time {s1:.1f} ({o / s1:.1f} ×); python-blosc2 {blosc2.__version__} "
            f"`blosc2.open(url, lazy=True)[:]` {p:.0f}: {theirs_requests} requests, {theirs_bytes / 1e6:.0f} MB",
            "≥ 8 × one chunk at a time, > python-blosc2", verdict(o >= 8 * s1 and o > p))

    # 16 readers of 16 leaves at once: the daemon's memory stays within its budgets.
    cache_mb, prefetch_mb = 256, 64
    mount(f"{nginx.url}/sixteen-4m.b2z", remote_mnt, ["-o", f"cache_size={cache_mb}M,prefetch={prefetch_mb}M"])
    pid = int(subprocess.run(["pgrep", "-n", "-f", f" {remote_mnt}$"], capture_output=True,
                             text=True).stdout.split()[0])
    peak = [0]
    done = threading.Event()

    def watch():
        while not done.is_set():
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        peak[0] = max(peak[0], int(line.split()[1]) // 1024)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    readers = [threading.Thread(target=timed_read, args=(os.path.join(remote_mnt, f"leaf{k:02d}", "data"),))
               for k in range(16)]
    for r in readers:
        r.start()
    for r in readers:
        r.join()
    done.set()
    watcher.join()
    unmount(remote_mnt)
    bound = cache_mb + prefetch_mb + 64
    row("remote: 16 parallel readers of 16 leaves of a .b2z from nginx: the daemon's peak RSS (MB)",
        f"{peak[0]}", f"cache_size {cache_mb} M + prefetch {prefetch_mb} M", f"≤ {bound} (+ 64 MB)",
        verdict(peak[0] <= bound))


# The frame of issue 32: noisy float32 (zstd clevel 5, shuffle, 4 MB chunks) that
# compresses less than 2x, so the transport moves more than half a byte per decoded byte.
NOISY_MB = min(512, SIZE_MB)
S3_KEYS = {"AWS_ACCESS_KEY_ID": "benchkey", "AWS_SECRET_ACCESS_KEY": "benchsecret-0123456789"}


def make_noisy_frame():
    path = os.path.join(DATA, f"noisy-{NOISY_MB}-4m.b2frame")
    if not os.path.exists(path):
        subprocess.run([MKFRAME, "float32-zstd", path + ".tmp", str(NOISY_MB), "4096"], check=True)
        os.rename(path + ".tmp", path)
        os.chmod(path, 0o644)
    return path


def machine_busy():
    """CPU seconds all cores of the machine have been busy so far (user, nice, system,
    irq, softirq from /proc/stat): the daemon, cat and the servers alike."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:8]]
    user, nice, system, _idle, _iowait, irq, softirq = fields
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def timed(run):
    """(seconds, machine CPU-s) that `run()` takes."""
    busy, start = machine_busy(), time.monotonic()
    run()
    return time.monotonic() - start, machine_busy() - busy


def timed_cat(paths):
    """(seconds, machine CPU-s) of `cat` reading `paths` to /dev/null."""
    return timed(lambda: subprocess.run(["cat"] + list(paths), stdout=subprocess.DEVNULL, check=True))


def raw_files(mnt):
    """raw/* as the shell expands it (sorted by name)."""
    return sorted(os.path.join(mnt, "raw", n) for n in os.listdir(os.path.join(mnt, "raw")))


def daemon_cpu(mnt):
    """CPU seconds (user, system) the daemon serving `mnt` has used so far."""
    found = subprocess.run(["pgrep", "-n", "-f", f" {mnt}$"], capture_output=True, text=True).stdout.split()
    if not found:
        return float("nan"), float("nan")
    with open(f"/proc/{found[0]}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def timed_mount_cat(frame, mnt, options=(), env=None, raw=False):
    """A fresh mount of `frame`, `cat data` (or `cat raw/*`) timed; (seconds, machine CPU-s, counters, cpu)."""
    mount(frame, mnt, options, env)
    try:
        t, busy = timed_cat(raw_files(mnt) if raw else [os.path.join(mnt, "data")])
        counters = source(mnt) if "://" in frame else None
        cpu = daemon_cpu(mnt)
    finally:
        unmount(mnt)
    return t, busy, counters, cpu


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def noisy_rows(nginx, frame, local_mnt, remote_mnt):
    name = os.path.basename(frame)
    url = f"{nginx.url}/{name}"
    stored = os.path.getsize(frame)
    ratio = NOISY_MB * 1024 * 1024 / stored
    timed_cat([frame])  # the file is page-cached for the local mount and nginx alike
    weed_dir = os.path.join(SCRATCH, "remote-seaweedfs")
    subprocess.run(["rm", "-rf", weed_dir])
    os.makedirs(weed_dir)
    env = dict(os.environ, **S3_KEYS)
    s3_opts = []
    # SeaweedFS volumes of 64 MB: enough of them for the frame.
    with SeaweedS3(weed_dir, S3_KEYS["AWS_ACCESS_KEY_ID"], S3_KEYS["AWS_SECRET_ACCESS_KEY"],
                   volume_max=stored // (64 << 20) + 8) as weed:
        weed.create_bucket("bench")
        weed.put_object("bench", name, frame)
        s3_url = f"s3://bench/{name}"
        s3_opts = ["-o", f"s3_endpoint={weed.url}"]
        cache = os.path.join(SCRATCH, "remote-noisy-cache")
        subprocess.run(["rm", "-rf", cache])
        cache_opts = ["-o", f"cache_dir={cache},cache_dir_size={2 * stored // (1 << 20) + 64}M"]
        timed_mount_cat(url, remote_mnt, cache_opts)  # fills the disk cache
        timed_mount_cat(s3_url, remote_mnt, s3_opts, env)  # SeaweedFS's first read
        log(f"noisy rows: load average {loadavg()} at start")
        keys = ("local", "nginx", "s3", "warm", "local_raw", "nginx_raw", "curl", "curl_s3")
        t, busy = {k: [] for k in keys}, {k: [] for k in keys}

        def record(key, measured):
            t[key].append(measured[0])
            busy[key].append(measured[1])
            return measured

        for _ in range(RUNS):
            record("local", timed_mount_cat(frame, local_mnt, ["-o", "ro"]))
            _, _, nginx_counters, nginx_cpu = record("nginx", timed_mount_cat(url, remote_mnt))
            _, _, s3_counters, _ = record("s3", timed_mount_cat(s3_url, remote_mnt, s3_opts, env))
            _, _, warm_counters, _ = record("warm", timed_mount_cat(url, remote_mnt, cache_opts))
            record("local_raw", timed_mount_cat(frame, local_mnt, ["-o", "ro"], raw=True))
            record("nginx_raw", timed_mount_cat(url, remote_mnt, raw=True))
            record("curl", timed(lambda: subprocess.run(["curl", "-sf", "-o", "/dev/null", url], check=True)))
            record("curl_s3", timed(lambda: weed.fetch_object("bench", name, "/dev/null")))
        log(f"noisy rows: load average {loadavg()} at the end; times {json.dumps(t)}; machine CPU-s {json.dumps(busy)}")
    m = {k: median(v) for k, v in t.items()}
    cpu = {k: median(v) for k, v in busy.items()}
    cores = os.cpu_count()

    def used(key):
        """Machine CPU-s of a row and how much of all cores that kept busy."""
        share = median([b / (cores * s) for b, s in zip(busy[key], t[key])])
        return f"machine busy {cpu[key]:.2f} CPU-s ({share:.0%} of {cores} cores)"

    def secs(key):
        lo, hi = min(t[key]), max(t[key])
        return f"{m[key]:.2f} s ({lo:.2f}–{hi:.2f})" if len(t[key]) > 1 else f"{m[key]:.2f} s"

    what = f"a {NOISY_MB} MB noisy float32 frame ({stored / 1e6:.0f} MB stored, {ratio:.2f} ×, 4 MB chunks)"
    local = f"local mount of the same page-cached file {secs('local')}, {used('local')}"
    for key, label, target in (("nginx", "from loopback nginx", 0.85), ("s3", "from SeaweedFS S3 on loopback", 0.75),
                               ("warm", "remount with a warm `cache_dir`", 0.9)):
        r = m["local"] / m[key]
        extra = ""
        if key in ("nginx", "s3"):
            counters, transfer = (nginx_counters, "curl") if key == "nginx" else (s3_counters, "curl_s3")
            # Both reads keep the cores about equally busy, so their times go as the CPU
            # they need: the target leaves the transfer what it says of the local mount's.
            budget = cpu["local"] * (1 / target - 1)
            extra = (f"; {counters['requests']} requests, {counters['bytes_fetched'] / 1e6:.0f} MB; {used(key)}, "
                     f"{cpu[key] - cpu['local']:.2f} more than the local mount; `curl -o /dev/null` of the object "
                     f"alone costs the machine {cpu[transfer]:.2f} CPU-s, and at the local mount's use of the cores "
                     f"≥ {target} × leaves {budget:.2f} CPU-s for the transfer")
            if key == "nginx":
                extra += f"; daemon CPU {nginx_cpu[0]:.2f} user + {nginx_cpu[1]:.2f} system s"
        else:
            extra = (f"; {warm_counters['disk_cache_hits']} disk-cache hits, {warm_counters['requests']} requests; "
                     f"{used('warm')}")
        row(f"remote: cold `cat data` of {what}, {label} (s)", f"{secs(key)} ({r:.2f} ×){extra}", local,
            f"≥ {target} × the local mount", verdict(r >= target))
    r = m["local_raw"] / m["nginx_raw"]
    row(f"remote: `cat raw/*` (stored chunks, nothing decoded) of {what}, fresh mounts, from loopback nginx (s)",
        f"{secs('nginx_raw')} ({r:.2f} ×)",
        f"local mount {secs('local_raw')}; `curl -o /dev/null` of the whole object {secs('curl')} from nginx, "
        f"{secs('curl_s3')} from SeaweedFS", "≥ 0.8 × the local mount", verdict(r >= 0.8))


def main():
    os.makedirs(DATA, exist_ok=True)
    local_mnt, remote_mnt = os.path.join(MNT, "local"), os.path.join(MNT, "remote")
    # The noisy frame is made first: its rows start from the servers' own files.
    noisy = make_noisy_frame() if "noisy" in PARTS else None
    with Nginx(DATA, os.path.join(SCRATCH, "remote-nginx")) as nginx:
        if "classic" in PARTS:
            classic_rows(nginx, local_mnt, remote_mnt)
        if "noisy" in PARTS:
            noisy_rows(nginx, noisy, local_mnt, remote_mnt)
    print_rows()


if __name__ == "__main__":
    try:
        main()
    finally:
        for m in ("local", "remote"):
            unmount(os.path.join(MNT, m))
