"""Remote data: frames and stores mounted from real servers on 127.0.0.1 that the
test starts and stops (remote_servers.py): Debian's nginx, SeaweedFS (S3 with
SigV4 keys), python's http.server (which ignores ranges), and a fault-injecting
proxy of our own. Every remote mount must show the same files, byte for byte,
as the local mount of the same file; python-blosc2's own lazy remote reader
must get the arrays the mount's array.npy gives; faults give exact bytes or EIO,
never a hang and never wrong bytes; credentials never show."""

import json
import os
import shutil
import subprocess
import threading
import time
import zipfile

import blosc2
import numpy as np

from harness import Harness, TestFailure, check, check_equal, daemon_pid, read_file, wait_until
from remote_servers import FaultProxy, Nginx, PlainHttpServer, SeaweedS3

ACCESS_KEY = "AKIDBLOSC2FSTEST"
SECRET_KEY = "blosc2fs-secret-never-shown-0123456789"
EXIT_MISSING, EXIT_INVALID, EXIT_UNREACHABLE = 2, 3, 7
# Files whose content is made anew or names the mount, not the frame.
SKIPPED_FILES = {".blosc2fs-cache"}


def tree_files(mnt, limit=400):
    """Relative path -> kind ("dir" or "file") of a mounted tree, at most `limit` entries."""
    out = {}
    for base, dirs, files in os.walk(mnt):
        dirs.sort()
        rel = os.path.relpath(base, mnt)
        for d in dirs:
            out[os.path.normpath(os.path.join(rel, d))] = "dir"
        for f in sorted(files):
            if f not in SKIPPED_FILES:
                out[os.path.normpath(os.path.join(rel, f))] = "file"
        if len(out) > limit:
            break
    return out


def without_origin(text):
    """frame.json/store.json without what names where the bytes came from."""
    j = json.loads(text)

    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in ("path", "source", "store", "file")}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v
    return strip(j)


def read_or_error(path):
    try:
        return read_file(path)
    except OSError as e:
        return f"error {e.errno}"


def shard_parts(zarr_json):
    """(zarr.json without the inner chunk shape, bytes of a shard's decoded chunk),
    or None for an array that is not sharded: remote arrays shard by block where
    local ones take runs of blocks (docs/zarr.md), the rest is the same."""
    try:
        j = json.loads(zarr_json)
    except (ValueError, UnicodeDecodeError):
        return None
    codecs = j.get("codecs") if isinstance(j, dict) else None
    if not codecs or codecs[0].get("name") != "sharding_indexed":
        return None
    itemsize = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "float16": 2, "int32": 4, "uint32": 4,
                "float32": 4, "int64": 8, "uint64": 8, "float64": 8, "complex64": 8, "complex128": 16}[j["data_type"]]
    data_bytes = itemsize
    for n in j["chunk_grid"]["configuration"]["chunk_shape"]:
        data_bytes *= n
    codecs[0]["configuration"].pop("chunk_shape")
    return j, data_bytes


def same_trees(local, remote, what):
    """Every file of the local mount reads the same in the remote one (a
    sharded Zarr view's inner chunks aside)."""
    lt, rt = tree_files(local), tree_files(remote)
    check_equal(sorted(rt), sorted(lt), f"{what}: the files of the tree")
    for rel, kind in lt.items():
        if kind != "file":
            continue
        a, b = read_or_error(os.path.join(local, rel)), read_or_error(os.path.join(remote, rel))
        parts = rel.split("/")
        array_root = "/".join(parts[:parts.index("c")]) if "c" in parts else None
        sharded = None
        if os.path.basename(rel) == "zarr.json" or array_root is not None:
            json_rel = "/".join(p for p in (array_root, "zarr.json") if p) if array_root is not None else rel
            if json_rel in lt and not isinstance(a, str):
                sharded = shard_parts(read_or_error(os.path.join(local, json_rel)))
        if os.path.basename(rel) in ("frame.json", "store.json") and not isinstance(a, str):
            check_equal(without_origin(b), without_origin(a), f"{what}: {rel}")
        elif sharded and os.path.basename(rel) == "zarr.json":
            theirs = shard_parts(b)
            check(theirs is not None and theirs[0] == sharded[0], f"{what}: {rel} differs beyond the inner chunk shape")
        elif sharded:
            check(a[:sharded[1]] == b[:sharded[1]], f"{what}: {rel}: the shard's chunk differs")
        else:
            check(a == b, f"{what}: {rel} differs ({len(a)} bytes locally, {len(b)} remote)")


def rezip(src, dst, method):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            zout.writestr(zipfile.ZipInfo(item.filename), zin.read(item.filename), compress_type=method)


def make_served_data(h, root):
    """The fixtures and what python-blosc2 writes, in `root`: name -> kind."""
    served = {}
    for fixtures in (h.fixtures, h.fixtures_extra):
        frames = os.path.join(fixtures, "frames")
        for name in sorted(os.listdir(frames)):
            src, dst = os.path.join(frames, name), os.path.join(root, name)
            if os.path.lexists(dst):
                continue
            (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, dst)
            served[name] = "sparse fixture" if os.path.isdir(src) else "fixture"
    rng = np.random.default_rng(7)
    big = rng.integers(0, 1000, size=(400, 500)).astype("f8")
    blosc2.asarray(big, urlpath=os.path.join(root, "py-array.b2nd"), chunks=(50, 500), blocks=(10, 500),
                   mode="w")
    served["py-array.b2nd"] = "b2nd"
    blosc2.asarray(big[:200], urlpath=os.path.join(root, "py-sparse.b2nd"), chunks=(50, 500), contiguous=False,
                   mode="w")
    served["py-sparse.b2nd"] = "sparse b2nd"
    # Chunks of 4 MiB that barely compress (3.7 MB stored), blocks of 256 KiB.
    blosc2.asarray(rng.random((8, 512, 1024)), urlpath=os.path.join(root, "py-bigchunks.b2nd"), chunks=(1, 512, 1024),
                   blocks=(1, 32, 1024), cparams=blosc2.CParams(codec=blosc2.Codec.LZ4, clevel=1), mode="w")
    served["py-bigchunks.b2nd"] = "b2nd, big chunks"
    blosc2.SChunk(chunksize=40000, data=bytes(range(256)) * 1000, urlpath=os.path.join(root, "py-plain.b2frame"),
                  mode="w")
    served["py-plain.b2frame"] = "plain SChunk"
    for name, cls in (("py-tree.b2z", blosc2.TreeStore), ("py-dict.b2d", blosc2.DictStore)):
        with cls(os.path.join(root, name), mode="w", threshold=20000) as s:
            s["/big"] = big[:100]                                 # external: over the threshold
            s["/grp/a b+c"] = big[100:150]                        # external, listed S3 keys encoded
            s["/grp/small"] = np.arange(50, dtype="i2")           # embedded
            s["/grp/text"] = np.array([b"ab", b"cde"], dtype="S3")
        served[name] = "store"
    rezip(os.path.join(root, "py-tree.b2z"), os.path.join(root, "py-deflated.b2z"), zipfile.ZIP_DEFLATED)
    served["py-deflated.b2z"] = "store (deflated members)"
    es = blosc2.EmbedStore(os.path.join(root, "py-embed.b2e"), mode="w")
    es["/a"] = np.arange(10, dtype="i2")
    es["/b/c"] = blosc2.SChunk(data=b"xyz" * 100)
    del es
    served["py-embed.b2e"] = "store"
    # python-blosc2 makes some files 0600: the web server's workers must read them.
    subprocess.run(["chmod", "-R", "a+rX", root], check=True)
    return served


def every_kind_from_nginx(h, root, served, nginx):
    # A .b2d needs its directory listed (its external leaves are found so): this
    # nginx gives no index (no autoindex), so it is refused with one line;
    # test_web_index lists through indexes, s3_mounts through ListObjectsV2.
    r = h.run(["--info", f"{nginx.url}/py-dict.b2d"])
    check_equal(r.returncode, EXIT_INVALID, f"a .b2d on a web server ({r.stderr.strip()})")
    check("cannot be listed" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr.strip())
    for name, kind in sorted(served.items()):
        if name.endswith(".b2d"):
            continue
        local = h.mount(os.path.join(root, name), ["-o", "ro"])
        try:
            remote = h.mount(f"{nginx.url}/{name}")
        except TestFailure as e:
            h.unmount(local)
            raise TestFailure(f"{name} ({kind}): {e}")
        try:
            same_trees(local, remote, f"{name} ({kind})")
        finally:
            h.unmount(remote)
            h.unmount(local)
    print(f"  {len(served)} files and directories mounted from nginx read as their local mounts", flush=True)


def python_blosc2_reads_the_same(h, root, nginx):
    """python-blosc2's RemoteArray reads the same arrays through the same URLs;
    where it fails (the Caterva2 example files), its local read is the reference."""
    # (python-blosc2 4.14.1 reads the Caterva2 example fixtures neither locally nor remotely.)
    for name in ("py-array.b2nd", "b2nd-3d-f8.b2nd", "b2nd-2d-u1.b2nd", "b2nd-1d-i4.b2nd", "py-sparse.b2nd"):
        url = f"{nginx.url}/{name}"
        mnt = h.mount(url)
        try:
            ours = np.load(os.path.join(mnt, "array.npy"))
        finally:
            h.unmount(mnt)
        if name == "py-sparse.b2nd":
            # python-blosc2 refuses a remote sparse frame ("open it with cache_dir="): ours is our edge.
            theirs, how = blosc2.open(os.path.join(root, name), mode="r")[:], "its local read"
        else:
            try:
                theirs, how = blosc2.open(url, mode="r", lazy=True)[:], "its lazy remote read"
            except Exception as e:
                print(f"  python-blosc2 cannot read {url} lazily ({type(e).__name__}: {e}); comparing with its "
                      "local read", flush=True)
                theirs, how = blosc2.open(os.path.join(root, name), mode="r")[:], "its local read"
        check(ours.dtype == theirs.dtype and np.array_equal(ours, theirs),
              f"{name}: array.npy of the URL mount differs from python-blosc2's ({how})")


def requests_at_mount(h, nginx):
    """Opening a frame costs at most 2 requests; a sequential read fetches ahead."""
    before = len(nginx.requests())
    mnt = h.mount(f"{nginx.url}/py-array.b2nd")
    try:
        at_mount = nginx.requests()[before:]
        check(len(at_mount) <= 2, f"{len(at_mount)} requests before the mount answered: {at_mount}")
        check(all(r["status"] == 206 and r["range"] for r in at_mount), f"not all range requests: {at_mount}")
        read_file(os.path.join(mnt, "data"))
        with open(os.path.join(mnt, "frame.json")) as f:
            source = json.load(f)["source"]
        check_equal(source["url"], f"{nginx.url}/py-array.b2nd", "source url")
        check(source["identity"].startswith("etag "), f"identity: {source['identity']}")
        check_equal(source["counters"]["requests"], len(nginx.requests()) - before, "requests counted")
        print(f"  mount: {len(at_mount)} requests; whole read: {source['counters']}", flush=True)
    finally:
        h.unmount(mnt)


def small_reads_of_big_chunks(h, root, nginx):
    """A small read of a chunk of 1 MiB or more fetches its header and the blocks it touches."""
    local = h.mount(os.path.join(root, "py-bigchunks.b2nd"), ["-o", "ro"])
    # The kernel's own readahead (128 KiB) only; the reads say they are random.
    mnt = h.mount(f"{nginx.url}/py-bigchunks.b2nd", ["-o", "read_ahead=0"])

    def pread(base, path, offset):
        fd = os.open(os.path.join(base, path), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            return os.pread(fd, 4096, offset)
        finally:
            os.close(fd)

    try:
        stored = int(json.load(open(os.path.join(local, "frame.json")))["cbytes"]) // 8
        # Chunks far apart: no sequential reader to fetch ahead for.
        for path, offset in (("data", 6 * 4194304 + 1000000), ("chunks/00000001", 2000000),
                             ("raw/00000004.chunk", 1500000)):
            before = sum(r["bytes"] for r in nginx.requests())
            got = pread(mnt, path, offset)
            fetched = sum(r["bytes"] for r in nginx.requests()) - before
            check(got == pread(local, path, offset), f"{path} at {offset}: the bytes differ from the local mount")
            check(fetched < stored // 4, f"{path}: {fetched} bytes fetched for 4 KiB of a {stored}-byte chunk")
            print(f"  4 KiB of {path}: {fetched} bytes fetched of a {stored}-byte chunk", flush=True)
        check(read_file(os.path.join(mnt, "data")) == read_file(os.path.join(local, "data")),
              "the whole data after partial chunks")
    finally:
        h.unmount(mnt)
        h.unmount(local)


def writes_are_erofs(h, nginx):
    mnt = h.mount(f"{nginx.url}/py-array.b2nd")
    try:
        for path in ("vlmeta/new", "data", "chunks/00000000"):
            try:
                with open(os.path.join(mnt, path), "wb") as f:
                    f.write(b"x")
                raise TestFailure(f"writing {path} worked")
            except OSError as e:
                check_equal(e.errno, 30, f"errno writing {path}")  # EROFS
    finally:
        h.unmount(mnt)
    r = h.run([f"{nginx.url}/py-array.b2nd", h.new_dir(), "-o", "rw"])
    check_equal(r.returncode, 1, f"-o rw on a URL ({r.stderr.strip()})")


def fstab_mount_and_unreachable(h, nginx):
    """mount.fuse3 with an fstab line's fields (what `mount` runs for type
    fuse.blosc2fs, _netdev and all) mounts a URL; a server that does not answer
    is exit status 7 (the systemd unit retries it). mount(8) itself would look
    for an installed blosc2fs, which test_packaging covers."""
    mnt = h.new_dir()
    env = dict(os.environ, PATH=os.path.dirname(h.binary) + os.pathsep + os.environ.get("PATH", ""))
    r = subprocess.run(["mount.fuse3", f"{nginx.url}/py-array.b2nd", mnt, "-t", "fuse.blosc2fs",
                        "-o", "ro,_netdev,nofail"], env=env, capture_output=True, text=True, timeout=120)
    check_equal(r.returncode, 0, f"mount -t fuse.blosc2fs URL: {r.stderr.strip()}")
    h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
    try:
        check(len(read_file(os.path.join(mnt, "data"))) == 400 * 500 * 8, "data through mount(8)")
        with open("/proc/self/mountinfo") as f:
            line = next(l for l in f if f" {mnt} " in l)
        check(f"{nginx.url}/py-array.b2nd" in line, f"the URL is the mount's source: {line.strip()}")
    finally:
        h.unmount(mnt)
    port = nginx.port
    nginx.stop()  # nothing listens there now: the last test of this server
    r = h.run(["-o", "retries=2", "--info", f"http://127.0.0.1:{port}/py-array.b2nd"])
    check_equal(r.returncode, EXIT_UNREACHABLE, f"an unreachable server ({r.stderr.strip()})")
    check_equal(len(r.stderr.strip().splitlines()), 1, "one line")


def tls_and_logins(h, root):
    """TLS is verified (a private CA through -o ca_file=); a web server's login
    comes from ~/.netrc, a token from a header file only its owner may read; a
    missing or wrong one is refused at mount with one line, and no secret shows."""
    d = h.new_dir("secrets")
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=120)
    with Nginx(root, os.path.join(h.workdir, "tls"), tls=(cert, key)) as server:
        url = f"{server.url}/py-array.b2nd"
        r = h.run(["--info", url])
        check_equal(r.returncode, EXIT_MISSING, f"an untrusted certificate ({r.stderr.strip()})")
        check("TLS" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr.strip())
        r = h.run(["-o", f"ca_file={cert}", "--info", url])
        check_equal(r.returncode, 0, f"with ca_file: {r.stderr.strip()}")
        mnt = h.mount(url, ["-o", f"ca_file={cert}"])
        try:
            check(len(read_file(os.path.join(mnt, "data"))) == 400 * 500 * 8, "data over TLS")
        finally:
            h.unmount(mnt)

    user, password = "reader", "pw-never-shown-4711"
    htpasswd = os.path.join(d, "htpasswd")
    hashed = subprocess.run(["openssl", "passwd", "-apr1", password], check=True, capture_output=True,
                            text=True).stdout.strip()
    with open(htpasswd, "w") as f:
        f.write(f"{user}:{hashed}\n")
    os.chmod(htpasswd, 0o644)
    home = os.path.join(d, "home")
    os.makedirs(home)
    with Nginx(root, os.path.join(h.workdir, "basic"), basic_auth=htpasswd) as server:
        url = f"{server.url}/py-array.b2nd"
        env = dict(os.environ, HOME=home)
        r = subprocess.run([h.binary, "--info", url], env=env, capture_output=True, text=True, timeout=120)
        check_equal(r.returncode, EXIT_MISSING, f"no login ({r.stderr.strip()})")
        check("HTTP 401" in r.stderr, r.stderr.strip())
        netrc = os.path.join(home, ".netrc")
        with open(os.open(netrc, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(f"machine 127.0.0.1 login {user} password {password}\n")
        mnt = h.new_dir()
        r = subprocess.run([h.binary, url, mnt], env=env, capture_output=True, text=True, timeout=120)
        check_equal(r.returncode, 0, f"a login from ~/.netrc: {r.stderr.strip()}")
        h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
        try:
            check(len(read_file(os.path.join(mnt, "data"))) == 400 * 500 * 8, "data with a login")
            text = open(os.path.join(mnt, "frame.json")).read()
            ps = subprocess.run(["ps", "axww", "-o", "args"], capture_output=True, text=True).stdout
            check(password not in text and password not in ps, "the password shows")
        finally:
            h.unmount(mnt)

    token = "tok-never-shown-0815"
    with Nginx(root, os.path.join(h.workdir, "bearer"), bearer=token) as server:
        url = f"{server.url}/py-array.b2nd"
        headers = os.path.join(d, "headers")
        with open(os.open(headers, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(f"Authorization: Bearer {token}\n")
        r = h.run(["--info", url])
        check_equal(r.returncode, EXIT_MISSING, f"no token ({r.stderr.strip()})")
        r = h.run(["-o", f"http_header_file={headers}", "--info", url])
        check_equal(r.returncode, 0, f"a token from a header file: {r.stderr.strip()}")
        check(token not in r.stdout, "the token shows in frame.json")
        # A redirect would carry the header file's lines to another place: not followed.
        r = h.run(["-o", f"http_header_file={headers}", "--info", f"{server.url}/moved/py-array.b2nd"])
        check(r.returncode != 0 and "redirected (HTTP 302)" in r.stderr,
              f"a redirect with a header file: {r.returncode} {r.stderr.strip()}")
        check_equal(len(r.stderr.strip().splitlines()), 1, "a redirect with a header file: one line")
        os.chmod(headers, 0o644)
        r = h.run(["-o", f"http_header_file={headers}", "--info", url])
        check_equal(r.returncode, 1, f"a header file others may read ({r.stderr.strip()})")
        check(token not in r.stderr, "the token shows in the message")


def refused_servers(h, root, nginx_no_ranges, plain):
    # Without a header file a web server's redirect is followed.
    r = h.run(["--info", f"{nginx_no_ranges.url}/moved/py-array.b2nd"])
    check("ignores Range" in r.stderr, f"a redirect followed: {r.returncode} {r.stderr.strip()}")
    for server, what in ((plain, "python -m http.server"), (nginx_no_ranges, "nginx with max_ranges 0")):
        for args in (["--info", f"{server.url}/py-array.b2nd"], [f"{server.url}/py-array.b2nd", h.new_dir()]):
            r = h.run(args)
            check_equal(r.returncode, EXIT_INVALID, f"{what}: exit status ({r.stderr.strip()})")
            lines = r.stderr.strip().splitlines()
            check_equal(len(lines), 1, f"{what}: stderr lines")
            check("ignores Range" in lines[0], f"{what}: message {lines[0]}")
    r = h.run(["--info", f"{nginx_no_ranges.url.replace('http', 'https', 1)}/x"])
    check(r.returncode in (EXIT_UNREACHABLE, EXIT_MISSING), f"https to a plain server: {r.returncode}")
    r = h.run(["--info", "http://user:pw@127.0.0.1:1/x.b2nd"])
    check_equal(r.returncode, 1, "a URL with a password is refused")
    check("pw" not in r.stderr, "the password is not repeated")
    r = h.run(["--info", f"{plain.url}/does-not-exist.b2nd"])
    check(r.returncode in (EXIT_MISSING, EXIT_INVALID), f"a missing object: status {r.returncode}")


def s3_mounts(h, root, served, s3):
    s3.create_bucket("data")
    names = ["py-array.b2nd", "py-plain.b2frame", "py-tree.b2z", "py-embed.b2e", "frame_simple-zstd.b2frame"]
    for name in names:
        s3.put_object("data", f"set/{name}", os.path.join(root, name))
    for name in ("py-sparse.b2nd", "py-dict.b2d", "b2nd-4d-i2-sframe.b2nd"):
        s3.put_tree("data", f"set/{name}", os.path.join(root, name))
        names.append(name)
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY)
    endpoint = ["-o", f"s3_endpoint={s3.url}"]
    for name in names:
        local = h.mount(os.path.join(root, name), ["-o", "ro"])
        mnt = h.new_dir()
        r = subprocess.run([h.binary] + endpoint + [f"s3://data/set/{name}", mnt], env=env, capture_output=True,
                           text=True, timeout=120)
        check_equal(r.returncode, 0, f"s3 mount of {name}: {r.stderr.strip()}")
        h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
        try:
            # The keys are nowhere a user can see: not in the process list, not in the JSON files.
            ps = subprocess.run(["ps", "axww", "-o", "args"], capture_output=True, text=True).stdout
            check(SECRET_KEY not in ps and ACCESS_KEY not in ps, "a key in the process list")
            for j in ("frame.json", "store.json"):
                if os.path.exists(os.path.join(mnt, j)):
                    text = open(os.path.join(mnt, j)).read()
                    check(SECRET_KEY not in text and ACCESS_KEY not in text, f"a key in {j}")
            same_trees(local, mnt, f"s3://data/set/{name}")
        finally:
            h.unmount(mnt)
            h.unmount(local)
    # Wrong keys and no keys: refused at mount, one line, nothing of the secret.
    for label, keys in (("a wrong secret", dict(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY="wrong")),
                        ("no keys", {})):
        clean = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        r = subprocess.run([h.binary] + endpoint + ["s3://data/set/py-array.b2nd", h.new_dir()],
                           env=dict(clean, **keys), capture_output=True, text=True, timeout=120)
        check_equal(r.returncode, EXIT_MISSING, f"{label}: exit status ({r.stderr.strip()})")
        check_equal(len(r.stderr.strip().splitlines()), 1, f"{label}: one line")
        check("access denied" in r.stderr, f"{label}: {r.stderr.strip()}")
    # Keys from a credentials file and a profile.
    creds = os.path.join(h.workdir, "aws-credentials")
    with open(creds, "w") as f:
        f.write(f"[other]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    r = subprocess.run([h.binary] + endpoint + ["--info", "s3://data/set/py-array.b2nd"],
                       env=dict(clean, AWS_SHARED_CREDENTIALS_FILE=creds, AWS_PROFILE="other"),
                       capture_output=True, text=True, timeout=120)
    check_equal(r.returncode, 0, f"keys from a profile: {r.stderr.strip()}")


def faults_give_exact_bytes_or_eio(h, root, nginx):
    local = h.mount(os.path.join(root, "py-array.b2nd"), ["-o", "ro"])
    want = read_file(os.path.join(local, "data"))
    h.unmount(local)
    proxy = FaultProxy(nginx.port, stall_seconds=60)
    try:
        # Every kind of transient fault, then success: the bytes are exact.
        for fault in ("drop", "503", "429", "short", "stall"):
            # No prefetch: each fault meets a read, which retries it.
            mnt = h.mount(f"{proxy.url}/py-array.b2nd", ["-o", "timeout=2,retries=5,prefetch=0"])
            try:
                proxy.plan = [fault, fault]
                started = time.monotonic()
                got = read_file(os.path.join(mnt, "data"))
                check(got == want, f"{fault}: the data differs")
                if fault == "stall":
                    print(f"  two stalls with timeout=2: read in {time.monotonic() - started:.1f} s", flush=True)
                with open(os.path.join(mnt, "frame.json")) as f:
                    counters = json.load(f)["source"]["counters"]
                check(counters["retries"] >= 1, f"{fault}: no retry counted ({counters})")
            finally:
                h.unmount(mnt)
        # Faults past every attempt: EIO, and the next read works again.
        mnt = h.mount(f"{proxy.url}/py-array.b2nd", ["-o", "retries=2,prefetch=0"])
        try:
            # More 503s than the reads the kernel may make of the page, each with two attempts.
            proxy.plan = ["503"] * 12
            try:
                read_file(os.path.join(mnt, "chunks", "00000003"))
                raise TestFailure("a read through 503s with retries=2 worked")
            except OSError as e:
                check_equal(e.errno, 5, "errno after every attempt failed")
            proxy.plan = []
            check(read_file(os.path.join(mnt, "chunks", "00000003")) ==
                  want[3 * 50 * 500 * 8:4 * 50 * 500 * 8], "the read after the faults")
        finally:
            h.unmount(mnt)
        # An object that changes under the mount: EIO from then on, never bytes of two versions.
        mnt = h.mount(f"{proxy.url}/py-array.b2nd")
        try:
            proxy.etag_from = proxy.count + 1
            errors = 0
            for n in range(8):
                try:
                    got = read_file(os.path.join(mnt, "chunks", f"{n:08d}"))
                    check(got == want[n * 200000:(n + 1) * 200000], f"chunk {n} after the change: wrong bytes")
                except OSError as e:
                    check_equal(e.errno, 5, "errno of a changed object")
                    errors += 1
            check(errors > 0, "no read noticed the changed ETag")
        finally:
            proxy.etag_from = None
            h.unmount(mnt)
        # An object removed under the mount: EIO too, not "no such file".
        shutil.copy(os.path.join(root, "py-array.b2nd"), os.path.join(root, "py-removed.b2nd"))
        mnt = h.mount(f"{proxy.url}/py-removed.b2nd")
        try:
            os.unlink(os.path.join(root, "py-removed.b2nd"))
            try:
                read_file(os.path.join(mnt, "chunks", "00000006"))
                raise TestFailure("a chunk of a removed object read")
            except OSError as e:
                check_equal(e.errno, 5, "errno of a removed object")
        finally:
            h.unmount(mnt)
        # Stopping the daemon (SIGTERM, as systemd and umount do) while a read
        # stalls for ten minutes: it ends every request and exits, the reader
        # gets an error, nothing waits for the server.
        mnt = h.mount(f"{proxy.url}/py-array.b2nd", ["-o", "timeout=600"])
        pid = daemon_pid(mnt)
        proxy.stall_seconds = 600
        proxy.plan = ["stall"] * 20
        outcome = {}

        def reader():
            try:
                read_file(os.path.join(mnt, "chunks", "00000005"))
                outcome["read"] = "bytes"
            except OSError as e:
                outcome["read"] = e.errno

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        check(wait_until(lambda: proxy.faults_done.count("stall") >= 1, 30), "the read never reached the proxy")
        start = time.monotonic()
        os.kill(pid, 15)
        check(wait_until(lambda: not os.path.exists(f"/proc/{pid}")), "the daemon did not exit on SIGTERM")
        t.join(30)
        took = time.monotonic() - start
        check(not t.is_alive(), "the stalled reader is still waiting after the daemon exited")
        check(outcome.get("read") != "bytes", f"the stalled read returned bytes: {outcome}")
        h.unmount(mnt)
        print(f"  SIGTERM during a stalled read: the daemon exited after {took:.1f} s; the reader got "
              f"{outcome}", flush=True)
    finally:
        proxy.stop()


def nginx_file_size(nginx, name):
    return os.path.getsize(os.path.join(nginx.root, name))


def disk_cache_warm_remount(h, nginx):
    cache = os.path.join(h.workdir, "cache")
    options = ["-o", f"cache_dir={cache},cache_dir_size=64M"]
    url = f"{nginx.url}/py-array.b2nd"
    mnt = h.mount(url, options)
    try:
        first = read_file(os.path.join(mnt, "data"))
    finally:
        h.unmount(mnt)
    before = len(nginx.requests())
    mnt = h.mount(url, options)
    try:
        second = read_file(os.path.join(mnt, "data"))
        with open(os.path.join(mnt, "frame.json")) as f:
            frame_json = json.load(f)
            counters = frame_json["source"]["counters"]
    finally:
        h.unmount(mnt)
    check(first == second, "the warm read differs")
    warm = nginx.requests()[before:]
    # The one request left pins the object's identity at mount.
    check_equal(len(warm), 1, f"requests of the warm remount: {warm}")
    check(counters["disk_cache_hits"] > 0, f"no disk cache hit: {counters}")
    # A frame of many blocks: each is read from disk once, a block two chunks share
    # at most once more (two readers at once), the blocks the mount itself reads
    # (header, index, metalayers: counted by a mount that reads no data) once
    # more, and prefetch loads none of them.
    big_url = f"{nginx.url}/py-bigchunks.b2nd"
    for warm_pass in range(3):
        mnt = h.mount(big_url, options)
        try:
            big = read_file(os.path.join(mnt, "data")) if warm_pass != 1 else None
            with open(os.path.join(mnt, "frame.json")) as f:
                frame_json = json.load(f)
        finally:
            h.unmount(mnt)
        if warm_pass == 0:
            big_first = big
        elif warm_pass == 1:
            mount_hits = frame_json["source"]["counters"]["disk_cache_hits"]
    check(big == big_first, "the warm read of py-bigchunks.b2nd differs")
    hits, nchunks = frame_json["source"]["counters"]["disk_cache_hits"], frame_json["nchunks"]
    nblocks = -(-nginx_file_size(nginx, "py-bigchunks.b2nd") // (1 << 20))
    print(f"  warm remount of py-bigchunks.b2nd: {hits} disk-cache hits for {nblocks} blocks, {nchunks} chunks, "
          f"{mount_hits} for the mount alone", flush=True)
    check(nblocks <= hits <= nblocks + nchunks - 1 + mount_hits,
          f"{hits} disk-cache hits for {nblocks} blocks, {nchunks} chunks and {mount_hits} for the mount alone")
    # A damaged entry is fetched again, never served.
    blocks = os.path.join(cache, "blocks")
    for name in os.listdir(blocks):
        with open(os.path.join(blocks, name), "r+b") as f:
            f.seek(-3, os.SEEK_END)
            f.write(b"\xde\xad\xbe")
    mnt = h.mount(url, options)
    try:
        check(read_file(os.path.join(mnt, "data")) == first, "read over a damaged cache")
    finally:
        h.unmount(mnt)
    used = sum(os.path.getsize(os.path.join(blocks, n)) for n in os.listdir(blocks))
    check(used <= 64 << 20, f"the cache holds {used} bytes")


def main():
    h = Harness("remote data: nginx, SeaweedFS, http.server, a fault proxy", watchdog_seconds=900)
    h.require_fuse()
    root = h.new_dir("served")
    served = make_served_data(h, root)
    with Nginx(root, h.workdir) as nginx:
        h.test("every kind mounted from nginx reads as its local mount", every_kind_from_nginx, h, root, served,
               nginx)
        h.test("python-blosc2's lazy remote read equals array.npy of the URL mount", python_blosc2_reads_the_same,
               h, root, nginx)
        h.test("a mount costs at most 2 requests; frame.json counts them", requests_at_mount, h, nginx)
        h.test("a small read of a big chunk fetches only the blocks it touches", small_reads_of_big_chunks, h,
               root, nginx)
        h.test("writes fail with EROFS; -o rw is refused", writes_are_erofs, h, nginx)
        h.test("faults: exact bytes or EIO, a changed object is EIO, unmount during a stall",
               faults_give_exact_bytes_or_eio, h, root, nginx)
        h.test("disk cache: a warm remount fetches no data; damage is refetched", disk_cache_warm_remount, h,
               nginx)
        h.test("mount -t fuse.blosc2fs URL (fstab); an unreachable server is exit status 7",
               fstab_mount_and_unreachable, h, nginx)
    h.test("TLS verified (ca_file=), logins from ~/.netrc, tokens from a header file", tls_and_logins, h, root)
    with Nginx(root, os.path.join(h.workdir, "no-ranges"), max_ranges=0) as no_ranges, \
            PlainHttpServer(root, h.workdir) as plain:
        h.test("servers that ignore Range are refused with one line", refused_servers, h, root, no_ranges, plain)
    try:
        s3 = SeaweedS3(h.workdir, ACCESS_KEY, SECRET_KEY)
    except RuntimeError as e:
        print(f"cannot run the S3 tests: {e}", flush=True)
        h.failed += 1
        h.finish()
    with s3:
        h.test("S3 (SeaweedFS): frames, sparse frames and stores with SigV4 keys; wrong keys refused", s3_mounts,
               h, root, served, s3)
    h.finish()


if __name__ == "__main__":
    main()
