"""Caterva2 servers as trees: a real cat2-server (BUILD/venv-caterva2, pinned
caterva2[server]) on 127.0.0.1, started by the test with a state directory of
the shared fixtures, frames and stores python-blosc2 writes here, and the
server's own root-example data. Every dataset must read byte for byte as the
local mount of its file; python-blosc2's own Caterva2 reader must get the
arrays the mount's array.npy gives; a dataset replaced on the server reads as
EIO or old bytes, never a mix; logins work with a login file and are refused
without one or with a wrong password, and the password never shows."""

import errno
import glob
import json
import os
import shutil

import blosc2
import numpy as np

from caterva2_server import Caterva2Server, build_dir_of, caterva2_venv
from remote_servers import _http_status
from harness import Harness, TestFailure, check, check_equal, daemon_pid, read_file, wait_until
from test_remote import same_trees

EXIT_USAGE, EXIT_MISSING, EXIT_UNREACHABLE = 1, 2, 7
USER, PASSWORD = "reader@example.com", "c2-password-never-shown-4711"
BLOSC2_SUFFIXES = (".b2nd", ".b2frame", ".b2z")


def c2url(server, path):
    return "caterva2+" + server.url + "/" + path


def make_public(h, public, bin_dir):
    """The served data: fixtures (files), python-blosc2's frames and stores, root-example."""
    for fixtures in (h.fixtures, h.fixtures_extra):
        for src in sorted(glob.glob(os.path.join(fixtures, "frames", "*"))):
            if os.path.isfile(src) and not os.path.exists(os.path.join(public, "fixtures", os.path.basename(src))):
                os.makedirs(os.path.join(public, "fixtures"), exist_ok=True)
                shutil.copy(src, os.path.join(public, "fixtures", os.path.basename(src)))
    site = glob.glob(os.path.join(os.path.dirname(bin_dir), "lib", "python3*", "site-packages", "root-example"))
    if not site:
        raise TestFailure("the caterva2 wheel's root-example data is missing")
    shutil.copytree(site[0], os.path.join(public, "root-example"))
    rng = np.random.default_rng(11)
    big = rng.integers(0, 1000, size=(400, 500)).astype("f8")
    os.makedirs(os.path.join(public, "py"), exist_ok=True)
    blosc2.asarray(big, urlpath=os.path.join(public, "py", "py-array.b2nd"), chunks=(50, 500), blocks=(10, 500),
                   mode="w")
    blosc2.SChunk(chunksize=40000, data=bytes(range(256)) * 1000, urlpath=os.path.join(public, "py", "py-plain.b2frame"),
                  mode="w")
    with blosc2.TreeStore(os.path.join(public, "py", "py-tree.b2z"), mode="w", threshold=20000) as s:
        s["/big"] = big[:100]
        s["/grp/small"] = np.arange(50, dtype="i2")
    write_replaceable(os.path.join(public, "replace-me.b2nd"), seed=1)
    make_directory_datasets(os.path.join(public, "dirs"))


def make_directory_datasets(where):
    """A sparse frame (python-blosc2 contiguous=False: chunks.b2frame and
    .chunk files) and a DictStore .b2d (embed.b2e and a leaf over its threshold)."""
    os.makedirs(where, exist_ok=True)
    values = np.random.default_rng(5).integers(0, 100, size=(400, 500)).astype("f8")
    blosc2.asarray(values, urlpath=os.path.join(where, "sparse.b2nd"), contiguous=False, chunks=(100, 500), mode="w")
    with blosc2.DictStore(os.path.join(where, "store.b2d"), mode="w", threshold=10000) as s:
        s["/small"] = np.arange(10)
        s["/big"] = np.arange(100000, dtype="i8")


def marked_directory(path):
    """Whether `path` is or lies inside a sparse frame's or .b2d store's directory."""
    while path and path != os.sep:
        if os.path.isdir(path) and any(os.path.exists(os.path.join(path, m)) for m in ("chunks.b2frame", "embed.b2e")):
            return True
        path = os.path.dirname(path)
    return False


def tree_of(root):
    """Every file below `root` with its size and bytes' hash, to see a server's state unchanged."""
    import hashlib
    out = {}
    for base, _, files in os.walk(root):
        for f in files:
            p = os.path.join(base, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def write_replaceable(path, seed):
    """A 4 MB array of incompressible values, written elsewhere and renamed in (as a server's upload does)."""
    values = np.random.default_rng(seed).random((512, 1024))
    tmp = path + ".tmp.b2nd"
    blosc2.asarray(values, urlpath=tmp, chunks=(32, 1024), mode="w", cparams={"clevel": 1})
    os.replace(tmp, path)


def served_datasets(public):
    out = []
    for base, dirs, files in os.walk(public):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(BLOSC2_SUFFIXES) and not marked_directory(base):
                out.append(os.path.relpath(os.path.join(base, f), public))
    return out


def test_tree(h, server, public):
    # Few retries: the server fails some datasets for good (HTTP 500, below).
    mnt = h.mount(c2url(server, "@public"), ["-o", "retries=2"])
    names = sorted(os.listdir(mnt))
    check("server.json" in names and "fixtures" in names and "root-example" in names, f"the root shows {names}")
    datasets = served_datasets(public)
    check(len(datasets) > 40, f"only {len(datasets)} datasets served")
    unserved = []
    for rel in datasets:
        check(os.path.isdir(os.path.join(mnt, rel)), f"{rel} is not a directory of the mount")
        # cat2-server opens a file before it serves it, and answers 500 for
        # frames its python-blosc2 cannot open (pre-release layouts): those read as EIO.
        if _http_status(f"{server.url}/api/fetch/@public/{rel}", {"Range": "bytes=0-0"}) == 500:
            unserved.append(rel)
            try:
                os.listdir(os.path.join(mnt, rel))
                raise TestFailure(f"{rel}: the server fails it, yet it lists")
            except OSError as e:
                check_equal(e.errno, errno.EIO, f"{rel}: the error of a dataset the server fails")
            continue
        local = h.mount(os.path.join(public, rel), ["-o", "ro"])
        try:
            same_trees(local, os.path.join(mnt, rel), rel)
        finally:
            h.unmount(local)
    check(len(unserved) < 10, f"the server fails {len(unserved)} datasets: {unserved}")
    if unserved:
        print(f"  cat2-server answers HTTP 500 for {len(unserved)} older frames: {unserved}", flush=True)
    # The files that are not Blosc2 are not trees.
    for rel in ("root-example/root-example.h5", "root-example/README.md"):
        check(not os.path.exists(os.path.join(mnt, rel)), f"{rel} shows in the tree")


def test_server_json(h, server, public):
    readme = os.path.join(public, "root-example", "README.md")
    readme_bytes = read_file(readme)
    mnt = h.mount(c2url(server, "@public/root-example"))
    text = read_file(os.path.join(mnt, "server.json")).decode()
    j = json.loads(text)
    check_equal(j["root"], "@public", "server.json root")
    check_equal(j["directory"], "root-example", "server.json directory")
    entries = {e["path"]: e for e in j["entries"]}
    check_equal(entries["root-example.h5"]["kind"], "hdf5", "the .h5 entry's kind")
    check(entries["root-example.h5"]["tree"] is False, "the .h5 entry is not a tree")
    check_equal(entries["root-example.h5"]["info"].get("kind"), "group", "the .h5 entry's info")
    check_equal(entries["ds-1d.b2nd"]["info"]["shape"], [1000], "ds-1d.b2nd's shape")
    check_equal(entries["dir1/ds-3d.b2nd"]["kind"], "b2nd", "a dataset in a directory")
    # Asked about README.md, cat2-server would replace it with a .b2 copy on its disk.
    check("info" not in entries["README.md"] and "info_not_asked" in entries["README.md"],
          f"README.md's entry: {entries['README.md']}")
    check(os.path.exists(readme) and read_file(readme) == readme_bytes, "the server's README.md was changed")
    check(j["counters"]["requests"] > 0, "server.json has the mount's counters")
    check(public not in text, "server.json shows the server's own file paths")


def test_directory_datasets(h, server, public):
    before = tree_of(os.path.join(public, "dirs"))
    mnt = h.mount(c2url(server, "@public/dirs"), ["-o", "retries=2"])
    check_equal(sorted(os.listdir(mnt)), ["server.json", "sparse.b2nd", "store.b2d", "zarr.json"],
                "the directory datasets' listing")
    entries = {e["path"]: e for e in json.loads(read_file(os.path.join(mnt, "server.json")))["entries"]}
    check_equal(sorted(entries), ["sparse.b2nd/chunks.b2frame", "store.b2d/embed.b2e"], "server.json's entries")
    check_equal(entries["sparse.b2nd/chunks.b2frame"]["kind"], "sparse_frame", "a sparse frame's kind")
    check_equal(entries["store.b2d/embed.b2e"]["shown_as"], "store.b2d", "a .b2d store's entry")
    for rel in ("sparse.b2nd", "store.b2d"):
        # cat2-server 2026.9.2 serves neither by bytes: api/fetch answers 500
        # for chunks.b2frame (it cannot open it alone) and refuses .chunk and
        # embed.b2e (400), rewriting them on its disk as it does (which the
        # mount must never cause). Where a server serves them, they must read
        # as their local mount.
        try:
            names = os.listdir(os.path.join(mnt, rel))
        except OSError as e:
            check_equal(e.errno, errno.EIO, f"{rel}: the error of a dataset the server does not serve")
            print(f"  {rel}: EIO (the server does not serve its files)", flush=True)
            continue
        local = h.mount(os.path.join(public, "dirs", rel), ["-o", "ro"])
        try:
            check(sorted(names) == sorted(os.listdir(local)), f"{rel}: {names}")
            same_trees(local, os.path.join(mnt, rel), rel)
        finally:
            h.unmount(local)
    h.unmount(mnt)
    check_equal(tree_of(os.path.join(public, "dirs")), before, "the server's files after the mount read them")


def test_multi_range_open(h, server, public):
    rel = "py/py-array.b2nd"
    check(os.path.getsize(os.path.join(public, rel)) > 2 * 65536, f"{rel} is too small to need a tail")
    fetch = "/api/fetch/@public/" + rel
    before = server.requests_for("GET", fetch)
    mnt = h.mount(c2url(server, "@public/" + rel), ["-o", "prefetch=0"])
    counters = json.loads(read_file(os.path.join(mnt, "frame.json")))["source"]["counters"]
    # Its header and its index and trailer: one request, two ranges, a multipart answer.
    check_equal(counters["requests"], 1, f"requests to open {rel} ({counters})")
    check(counters["bytes_fetched"] >= 2 * 65536, f"the open fetched {counters['bytes_fetched']} bytes")
    check(wait_until(lambda: server.requests_for("GET", fetch) - before >= 1, 10, interval=0.1),
          "the access log shows no fetch")
    check_equal(server.requests_for("GET", fetch) - before, 1, "api/fetch requests in the server's access log")
    local = h.mount(os.path.join(public, rel), ["-o", "ro"])
    same_trees(local, mnt, rel + " opened in one request")
    h.unmount(local)
    h.unmount(mnt)


def test_multi_range_fallback(h, public):
    """nginx as a second implementation of multi-range answers (its multipart
    layout differs from Starlette's), and with max_ranges 1 as a server that
    answers two ranges with the whole file (HTTP 200): the mount must fall back
    to one range per request and never take the 200's body."""
    from remote_servers import Nginx
    rel = "py/py-array.b2nd"
    root = h.new_dir("nginx-root")
    os.makedirs(os.path.join(root, "api", "fetch", "@public", "py"))
    shutil.copy(os.path.join(public, rel), os.path.join(root, "api", "fetch", "@public", rel))
    local = h.mount(os.path.join(public, rel), ["-o", "ro"])
    for max_ranges, want in ((None, 1), (1, 3)):
        with Nginx(root, h.new_dir("nginx"), max_ranges=max_ranges) as web:
            mnt = h.mount("caterva2+" + web.url + "/@public/" + rel, ["-o", "prefetch=0"])
            counters = json.loads(read_file(os.path.join(mnt, "frame.json")))["source"]["counters"]
            # One multipart answer; or a 200 (cut at the bound), then the head and the tail.
            check_equal(counters["requests"], want, f"requests to open with nginx max_ranges={max_ranges}")
            fetched = [r for r in web.requests() if r["path"].startswith("/api/fetch/")]
            if max_ranges == 1:
                check_equal(fetched[0]["status"], 200, "nginx's answer to two ranges with max_ranges 1")
                # Of the 200's body, no more than the two ranges' bound (2 x 64 KiB + 4 KiB) was received.
                check(counters["bytes_fetched"] <= 3 * 65536 + 2 * 65536 + 4096,
                      f"more of the 200's body than the bound was received: {counters}")
            same_trees(local, mnt, f"{rel} from nginx max_ranges={max_ranges}")
            h.unmount(mnt)
    h.unmount(local)


def test_single_dataset(h, server, public):
    for rel in ("py/py-array.b2nd", "py/py-tree.b2z", "root-example/ds-hello.b2frame"):
        mnt = h.mount(c2url(server, "@public/" + rel))
        local = h.mount(os.path.join(public, rel), ["-o", "ro"])
        same_trees(local, mnt, rel + " alone")
        h.unmount(local)
        h.unmount(mnt)


def test_python_blosc2(h, server, public):
    mnt = h.mount(c2url(server, "@public"))
    for rel in ("py/py-array.b2nd", "root-example/ds-2d-fields.b2nd", "root-example/dir1/ds-3d.b2nd",
                "fixtures/b2nd-3d-f8.b2nd"):
        theirs = blosc2.open(blosc2.URLPath("@public/" + rel, server.url))[:]
        ours = np.load(os.path.join(mnt, rel, "array.npy"))
        check(theirs.dtype == ours.dtype and theirs.shape == ours.shape and
              theirs.tobytes() == ours.tobytes(), f"{rel}: python-blosc2's C2Array and the mount differ")


def test_read_only(h, server, public):
    mnt = h.mount(c2url(server, "@public"))
    for action in (lambda: open(os.path.join(mnt, "new"), "w"),
                   lambda: open(os.path.join(mnt, "py", "py-array.b2nd", "data"), "r+b"),
                   lambda: os.mkdir(os.path.join(mnt, "d")),
                   lambda: os.unlink(os.path.join(mnt, "py", "py-array.b2nd", "frame.json"))):
        try:
            action()
            raise TestFailure("a write to a Caterva2 mount worked")
        except OSError as e:
            check(e.errno in (errno.EROFS, errno.EPERM, errno.EACCES), f"a write failed with {e}")


def test_replaced(h, server, public):
    path = os.path.join(public, "replace-me.b2nd")
    write_replaceable(path, seed=1)
    old = blosc2.open(path)[:].tobytes()
    mnt = h.mount(c2url(server, "@public"), ["-o", "prefetch=0"])
    data = os.path.join(mnt, "replace-me.b2nd", "data")
    with open(data, "rb") as f:
        head = f.read(1 << 16)
    check_equal(head, old[:1 << 16], "the first bytes before the replacement")
    write_replaceable(path, seed=2)
    try:
        with open(data, "rb") as f:
            got = f.read()
        check(got == old, "a replaced dataset read as bytes that are not its old ones")
        print("  the replaced dataset read as its old bytes", flush=True)
    except OSError as e:
        check_equal(e.errno, errno.EIO, "a replaced dataset's read error")
        print("  the replaced dataset read as EIO", flush=True)


def test_list_ttl(h, server, public):
    mnt = h.mount(c2url(server, "@public"), ["-o", "list_ttl=1"])
    check(not os.path.exists(os.path.join(mnt, "late.b2nd")), "late.b2nd before it was written")
    blosc2.asarray(np.arange(100), urlpath=os.path.join(public, "late.b2nd"), mode="w")
    check(wait_until(lambda: "late.b2nd" in os.listdir(mnt), 60, interval=0.2),
          "a dataset added on the server never showed")
    check_equal(np.load(os.path.join(mnt, "late.b2nd", "array.npy")).tolist(), list(range(100)), "late.b2nd")
    os.unlink(os.path.join(public, "late.b2nd"))
    check(wait_until(lambda: "late.b2nd" not in os.listdir(mnt), 60, interval=0.2),
          "a dataset removed on the server never went")


def test_disk_cache(h, server, public):
    cache = h.new_dir("cache")
    rel = "py/py-array.b2nd"
    counters = []
    for _ in range(2):
        mnt = h.mount(c2url(server, "@public"), ["-o", f"cache_dir={cache}"])
        got = read_file(os.path.join(mnt, rel, "array.npy"))
        check_equal(np.load(os.path.join(mnt, rel, "array.npy")).tobytes(), blosc2.open(os.path.join(public, rel))[:].tobytes(),
                    f"{rel} through cache_dir")
        counters.append(json.loads(read_file(os.path.join(mnt, rel, "frame.json")))["source"]["counters"])
        check(len(got) > 0, "array.npy is empty")
        h.unmount(mnt)
    check(counters[1]["disk_cache_hits"] > 0, f"a remount with cache_dir= hit nothing: {counters[1]}")
    check(counters[1]["bytes_fetched"] < counters[0]["bytes_fetched"], f"the remount fetched as much: {counters}")


def test_refused(h, server, public):
    mnt = h.new_dir()
    r = h.run([c2url(server, "@public/no-such-dir/x.b2nd"), mnt])
    check_equal(r.returncode, EXIT_MISSING, f"a missing dataset's exit status ({r.stderr.strip()})")
    check(len(r.stderr.strip().splitlines()) == 1, f"more than one line: {r.stderr!r}")
    r = h.run(["caterva2+http://127.0.0.1:1/@public", mnt, "-o", "retries=1"])
    check_equal(r.returncode, EXIT_UNREACHABLE, f"an unreachable server's exit status ({r.stderr.strip()})")
    r = h.run(["caterva2+http://user:pw@127.0.0.1:1/@public", mnt])
    check_equal(r.returncode, EXIT_USAGE, "a password in the URL")


def login_file(h, user, password, mode=0o600):
    path = os.path.join(h.new_dir("login"), "login")
    with open(path, "w") as f:
        f.write(f"{user}\n{password}\n")
    os.chmod(path, mode)
    return path


def test_login(h, server, local_file):
    good = login_file(h, USER, PASSWORD)
    mnt = h.mount(c2url(server, "@personal"), ["-o", f"caterva2_login_file={good}"])
    local = h.mount(local_file, ["-o", "ro"])
    same_trees(local, os.path.join(mnt, "mine.b2nd"), "@personal/mine.b2nd")
    text = read_file(os.path.join(mnt, "server.json")).decode()
    check(json.loads(text)["logged_in"] is True, "server.json says logged in")
    check(PASSWORD not in text, "the password shows in server.json")
    frame_json = read_file(os.path.join(mnt, "mine.b2nd", "frame.json")).decode()
    check(PASSWORD not in frame_json and "c2subauth" not in frame_json, "a secret shows in frame.json")
    with open(f"/proc/{daemon_pid(mnt)}/cmdline", "rb") as f:
        check(PASSWORD.encode() not in f.read(), "the password shows in the process list")
    shared = h.mount(c2url(server, "@shared"), ["-o", f"caterva2_login_file={good}"])
    check("shared.b2nd" in os.listdir(shared), "@shared lists with a login")


def test_login_again(h, server, local_file, restart):
    """The server restarted with another secret refuses the mount's cookie: the
    mount logs in again by itself and keeps reading @personal."""
    good = login_file(h, USER, PASSWORD)
    mnt = h.mount(c2url(server, "@personal"), ["-o", f"caterva2_login_file={good}", "-o", "list_ttl=1",
                                                 "-o", "prefetch=0"])
    check("mine.b2nd" in os.listdir(mnt), "@personal lists")
    old_cookie = server.login_cookie(USER, PASSWORD)
    logins = server.requests_for("POST", "/auth/jwt/login")
    server = restart()
    check_equal(_http_status(server.url + "/api/list/@personal", {"Cookie": old_cookie}), 401,
                "the restarted server's answer to a cookie of before")
    local = h.mount(local_file, ["-o", "ro"])
    same_trees(local, os.path.join(mnt, "mine.b2nd"), "@personal/mine.b2nd after the server's restart")
    h.unmount(local)
    check(server.requests_for("POST", "/auth/jwt/login") >= 1,
          f"the mount did not log in again (logins before the restart: {logins})")
    check(wait_until(lambda: "mine.b2nd" in os.listdir(mnt), 30, interval=0.2), "@personal lists after the restart")
    h.unmount(mnt)
    return server


def test_login_refused(h, server):
    mnt = h.new_dir()
    r = h.run([c2url(server, "@personal"), mnt])
    check_equal(r.returncode, EXIT_MISSING, f"@personal without a login ({r.stderr.strip()})")
    check("login" in r.stderr and len(r.stderr.strip().splitlines()) == 1, f"the refusal says why: {r.stderr!r}")
    bad = login_file(h, USER, "wrong-password")
    r = h.run([c2url(server, "@personal"), mnt, "-o", f"caterva2_login_file={bad}"])
    check_equal(r.returncode, EXIT_MISSING, f"a wrong password ({r.stderr.strip()})")
    check("wrong-password" not in r.stderr, "the password shows in the message")
    loose = login_file(h, USER, PASSWORD, mode=0o644)
    r = h.run([c2url(server, "@personal"), mnt, "-o", f"caterva2_login_file={loose}"])
    check_equal(r.returncode, EXIT_USAGE, f"a login file others may read ({r.stderr.strip()})")
    check(PASSWORD not in r.stderr, "the password shows in the message")


def test_zarr_view(h, server, public):
    """A Caterva2 root is a Zarr group like a local folder (docs/zarr.md): zarr-python
    walks py/ and reads an array and a TreeStore leaf as python-blosc2 does locally."""
    import warnings

    import zarr
    mnt = h.mount(c2url(server, "@public"), ["-o", "retries=2"])
    check_equal(json.loads(read_file(os.path.join(mnt, "zarr.json")))["node_type"], "group", "the root's zarr.json")
    g = zarr.open_group(os.path.join(mnt, "py"), mode="r")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        members = dict(g.members(max_depth=None))
    want = blosc2.open(os.path.join(public, "py", "py-array.b2nd"))[:]
    check(np.array_equal(members["py-array.b2nd"][...], want), "py-array.b2nd through zarr-python")
    check(np.array_equal(members["py-tree.b2z/grp/small"][...], np.arange(50, dtype="i2")),
          "a TreeStore leaf on the server through zarr-python")


def main():
    h = Harness("Caterva2 servers as trees: a real cat2-server on 127.0.0.1", watchdog_seconds=600)
    h.require_fuse()
    bin_dir = caterva2_venv(build_dir_of(h.binary))
    if not bin_dir:
        print("cannot run: BUILD/venv-caterva2 is missing; scripts/test.sh makes it (scripts/caterva2-venv.sh BUILD)",
              flush=True)
        h.failed += 1
        h.finish()
    state = h.new_dir("state")
    public = os.path.join(state, "public")
    os.makedirs(public, exist_ok=True)
    make_public(h, public, bin_dir)
    with Caterva2Server(bin_dir, h.workdir, state) as server:
        h.test("every dataset reads as its local file mounts", test_tree, h, server, public)
        h.test("server.json: the listing, HDF5 files included, and the counters", test_server_json, h, server,
               public)
        h.test("one dataset mounted alone", test_single_dataset, h, server, public)
        h.test("a dataset opens in one request (two ranges, a multipart answer)", test_multi_range_open, h, server,
               public)
        h.test("multi-range answers from nginx, and its 200 to two ranges: one range per request then",
               test_multi_range_fallback, h, public)
        h.test("sparse frames and .b2d stores on the server: one dataset each, the server's files untouched",
               test_directory_datasets, h, server, public)
        h.test("python-blosc2's C2Array gives the arrays the mount gives", test_python_blosc2, h, server, public)
        h.test("read-only: writes fail with EROFS", test_read_only, h, server, public)
        h.test("the Zarr view: the root is a group, zarr-python reads its arrays", test_zarr_view, h, server, public)
        h.test("a dataset replaced on the server reads as EIO or old bytes", test_replaced, h, server, public)
        h.test("list_ttl: datasets added and removed on the server show", test_list_ttl, h, server, public)
        h.test("cache_dir= keeps a dataset's bytes across mounts", test_disk_cache, h, server, public)
        h.test("missing paths and unreachable servers are refused at mount", test_refused, h, server, public)
    login_state = h.new_dir("login-state")
    servers = [Caterva2Server(bin_dir, h.workdir, login_state, secret="blosc2fs-test-secret-0123456789abcdef")]
    try:
        server = servers[0]
        server.add_user(USER, PASSWORD)
        cookie = server.login_cookie(USER, PASSWORD)
        local_file = os.path.join(public, "py", "py-array.b2nd")
        server.upload(cookie, "@personal/mine.b2nd", local_file)
        shutil.copy(local_file, os.path.join(login_state, "shared", "shared.b2nd"))
        h.test("@personal and @shared read with a login file", test_login, h, server, local_file)
        h.test("logins refused: none, a wrong password, a file others may read", test_login_refused, h, server)

        def restart():
            # The same state (users, files) and port, another secret: every cookie signed before is void.
            old = servers[-1]
            old.stop()
            servers.append(Caterva2Server(bin_dir, h.workdir, login_state,
                                          secret="blosc2fs-test-secret-rotated-fedcba9876543210", port=old.port))
            return servers[-1]

        h.test("a cookie the server no longer takes: the mount logs in again", test_login_again, h, server,
               local_file, restart)
        h.test("logins refused after the restart too", test_login_refused, h, servers[-1])
    finally:
        for s in servers:
            s.stop()
    h.finish()


if __name__ == "__main__":
    main()
