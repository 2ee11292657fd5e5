"""Collections (issue 29): a local folder or an S3 prefix of many datasets
mounted as one tree. Every dataset's directory reads as the mount of that
dataset alone; other files read as themselves; symlinks stay symlinks; fifos
are not shown; a corrupt dataset reads EIO and is named in collection.json;
mounting and listing open no dataset, at most max_open stay open; the listing
follows the folder; a dataset removed or replaced under the mount gives an
open file its version or EIO, and fresh opens of a replaced one read its new
version; writes inside a local collection's datasets are frame
edits python-blosc2 reads back; the collection's own directories refuse
changes; hostile S3 keys are left out."""

import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Harness, check, check_equal, check_one_version, read_across_change,  # noqa: E402
                     read_file, stop_process, wait_or_kill, wait_until)
from remote_servers import SeaweedS3  # noqa: E402
from test_remote import same_trees  # noqa: E402
from writes import frame_state, sh  # noqa: E402

import blosc2  # noqa: E402
import numpy as np  # noqa: E402

ACCESS_KEY, SECRET_KEY = "collections-key", "collections-secret-0123456789"
FIXTURES = ("b2nd-3d-f8.b2nd", "frame_simple-zstd.b2frame", "metas-vlmetas.b2frame", "sframe-zstd-f4.b2frame",
            "b2nd-4d-i2-sframe.b2nd")


def make_folder(h, root, hostile=True):
    """The datasets of every kind, other files, links, a fifo and a corrupt frame
    in `root`; returns {relative path of each dataset: kind}."""
    datasets = {}
    for name in FIXTURES:
        h.copy_fixture(name, root)
        datasets[name] = "fixture"
    a = blosc2.asarray(np.arange(3000, dtype="i4").reshape(30, 100), urlpath=os.path.join(root, "py.b2nd"),
                       chunks=(10, 100), mode="w")
    a.vlmeta["note"] = "a note"
    datasets["py.b2nd"] = "b2nd"
    blosc2.SChunk(chunksize=4000, data=b"schunk bytes " * 1000, urlpath=os.path.join(root, "py.b2"), mode="w")
    datasets["py.b2"] = "SChunk"
    blosc2.asarray(np.arange(500), urlpath=os.path.join(root, "py-sparse.b2nd"), chunks=(100,), contiguous=False,
                   mode="w")
    datasets["py-sparse.b2nd"] = "sparse"
    for suffix in (".b2d", ".b2z"):
        with blosc2.DictStore(os.path.join(root, "store" + suffix), mode="w") as store:
            store["/x"] = np.arange(100)
            store["/y"] = blosc2.asarray(np.linspace(0, 1, 50))
        datasets["store" + suffix] = suffix
    # (Not embed.b2e: a folder holding embed.b2e is a .b2d store.)
    with blosc2.EmbedStore(os.path.join(root, "embedded.b2e"), mode="w") as store:
        store["/z"] = np.arange(10)
    datasets["embedded.b2e"] = ".b2e"
    deep = os.path.join(root, "one", "two", "three")
    os.makedirs(deep)
    blosc2.asarray(np.arange(64), urlpath=os.path.join(deep, "deep.b2nd"), mode="w")
    datasets["one/two/three/deep.b2nd"] = "b2nd"
    # A frame whose name says nothing: local folders sniff the header.
    shutil.copyfile(os.path.join(root, "py.b2nd"), os.path.join(root, "no-suffix"))
    datasets["no-suffix"] = "sniffed"
    with open(os.path.join(root, "README.md"), "w") as f:
        f.write("# results\n")
    with open(os.path.join(root, "one", "table.csv"), "w") as f:
        f.write("a,b\n1,2\n")
    with open(os.path.join(root, "corrupt.b2nd"), "wb") as f:
        f.write(b"\x9e\xa8b2frame\x00" + b"\xff" * 200)
    if hostile:
        os.symlink("py.b2nd", os.path.join(root, "link.b2nd"))
        outside = os.path.join(h.new_dir("outside"), "secret.txt")
        with open(outside, "w") as f:
            f.write("outside\n")
        os.symlink(outside, os.path.join(root, "outside-link"))
        os.mkfifo(os.path.join(root, "fifo"))
    return datasets


def expect_eio(path, what):
    try:
        os.listdir(path)
    except OSError as e:
        check_equal(e.errno, errno.EIO, what)
        return
    check(False, f"{what}: it lists")


def description(mnt):
    return json.loads(read_file(os.path.join(mnt, "collection.json")))


def same_as_single_mounts(h, root, mnt, datasets, what):
    for rel in sorted(datasets):
        alone = h.mount(os.path.join(root, rel), ["-o", "ro"])
        try:
            same_trees(alone, os.path.join(mnt, rel), f"{what}: {rel}")
        finally:
            h.unmount(alone)


def local_tree(h):
    root = h.new_dir("folder")
    datasets = make_folder(h, root)
    mnt = h.mount(root, ["-o", "ro"])
    names = sorted(os.listdir(mnt))
    check("fifo" not in names, f"the fifo shows: {names}")
    check("collection.json" in names and "README.md" in names and "one" in names, f"the root shows {names}")
    # Listing opens nothing.
    check_equal(description(mnt)["open_datasets"], 0, "datasets open after ls")
    same_as_single_mounts(h, root, mnt, datasets, "local")
    for rel in ("README.md", "one/table.csv"):
        check_equal(read_file(os.path.join(mnt, rel)), read_file(os.path.join(root, rel)), rel)
    check(os.path.islink(os.path.join(mnt, "link.b2nd")), "link.b2nd is not a symlink")
    check_equal(os.readlink(os.path.join(mnt, "link.b2nd")), "py.b2nd", "a relative link's target")
    check_equal(os.readlink(os.path.join(mnt, "outside-link")), os.readlink(os.path.join(root, "outside-link")),
                "an absolute link's target")
    # Through the mount, the relative link leads to the dataset's tree.
    check_equal(sorted(os.listdir(os.path.join(mnt, "link.b2nd"))), sorted(os.listdir(os.path.join(mnt, "py.b2nd"))),
                "the linked dataset")
    expect_eio(os.path.join(mnt, "corrupt.b2nd"), "a corrupt dataset")
    j = description(mnt)
    check(any(f["path"] == "corrupt.b2nd" and f["why"] for f in j["failed"]),
          f"collection.json's failed: {j['failed']}")
    kinds = {e["path"]: e.get("kind") for e in j["entries"]}
    check_equal(kinds["store.b2d"], "b2d", "a .b2d's kind")
    check_equal(kinds["py-sparse.b2nd"], "sparse_frame", "a sparse frame's kind")
    check_equal(kinds["README.md"], "file", "README.md's kind")
    check(j["open_datasets"] <= 64, "open datasets")
    r = h.run(["--info", root])
    check_equal(r.returncode, 0, f"--info of a folder: {r.stderr}")
    check_equal(sorted(e["path"] for e in json.loads(r.stdout)["entries"]), sorted(e["path"] for e in j["entries"]),
                "--info's entries")
    h.unmount(mnt)


def lazy_and_bounded(h):
    root = h.new_dir("many")
    for i in range(8):
        blosc2.asarray(np.arange(100) + i, urlpath=os.path.join(root, f"a{i}.b2nd"), mode="w")
    mnt = h.mount(root, ["-o", "ro,max_open=2,list_ttl=1"])
    first = os.stat(os.path.join(mnt, "a0.b2nd", "frame.json")).st_ino
    for i in range(8):
        check_equal(np.load(os.path.join(mnt, f"a{i}.b2nd", "array.npy")).tolist(), (np.arange(100) + i).tolist(),
                    f"a{i}.b2nd")
    check(description(mnt)["open_datasets"] <= 2, "more than max_open datasets open")
    check_equal(os.stat(os.path.join(mnt, "a0.b2nd", "frame.json")).st_ino, first, "an inode number after reopening")
    blosc2.asarray(np.arange(7), urlpath=os.path.join(root, "late.b2nd"), mode="w")
    check(wait_until(lambda: "late.b2nd" in os.listdir(mnt), 60, interval=0.2), "a new dataset never showed")
    os.unlink(os.path.join(root, "a1.b2nd"))
    check(wait_until(lambda: "a1.b2nd" not in os.listdir(mnt), 60, interval=0.2), "a removed dataset never went")
    h.unmount(mnt)


def replaced_and_removed(h):
    """A dataset file removed or replaced (a new file renamed over it) under
    the mount: a file open in its tree reads the bytes of the version it
    opened, or EIO, never other bytes (the replaced one's fresh opens read the
    new version meanwhile); the next listing shows the change (the removed one
    goes, a new one appears)."""
    root = h.new_dir("changing")
    old = np.arange(200_000, dtype="i8")
    new = -old - 1  # differs from the old version everywhere, the same size
    for name in ("replaced.b2nd", "removed.b2nd"):
        blosc2.asarray(old, urlpath=os.path.join(root, name), chunks=(10_000,), mode="w")
    mnt = h.mount(root, ["-o", "ro,list_ttl=1"])
    reference = h.new_dir("npy")
    np.save(os.path.join(reference, "old.npy"), old)
    np.save(os.path.join(reference, "new.npy"), new)
    old_npy, new_npy = read_file(os.path.join(reference, "old.npy")), read_file(os.path.join(reference, "new.npy"))

    got = read_across_change(os.path.join(mnt, "removed.b2nd", "array.npy"),
                             lambda: os.unlink(os.path.join(root, "removed.b2nd")),
                             lambda: "removed.b2nd" not in os.listdir(mnt), "removed.b2nd/array.npy")
    check_one_version(got, old_npy, new_npy, "an open array.npy read across its dataset's removal")

    def replace():
        blosc2.asarray(new, urlpath=os.path.join(root, "incoming.b2nd"), chunks=(10_000,), mode="w")
        os.replace(os.path.join(root, "incoming.b2nd"), os.path.join(root, "replaced.b2nd"))

    def reads_new():
        try:
            return read_file(os.path.join(mnt, "replaced.b2nd", "array.npy")) == new_npy
        except OSError:
            return False

    check_equal(read_file(os.path.join(mnt, "replaced.b2nd", "array.npy")), old_npy, "replaced.b2nd before")
    # The fresh opens that poll for the new version read while the old file is
    # open: what they read must not reach the old file through the page cache.
    got = read_across_change(os.path.join(mnt, "replaced.b2nd", "array.npy"), replace, reads_new,
                             "replaced.b2nd/array.npy")
    check_one_version(got, old_npy, new_npy, "an open array.npy read across its dataset's replacement")
    check_equal(read_file(os.path.join(mnt, "replaced.b2nd", "array.npy")), new_npy,
                "the replaced dataset after the old file closed")
    # The next listing: the removed one went, a new one appears.
    blosc2.asarray(old[:10], urlpath=os.path.join(root, "added.b2nd"), mode="w")
    check(wait_until(lambda: "removed.b2nd" not in os.listdir(mnt) and "added.b2nd" in os.listdir(mnt), 60,
                     interval=0.2), f"the listing never showed the change: {sorted(os.listdir(mnt))}")
    check_equal(np.load(os.path.join(mnt, "added.b2nd", "array.npy")).tolist(), old[:10].tolist(), "the added dataset")
    h.unmount(mnt)


def local_writes(h):
    root = h.new_dir("writable")
    blosc2.asarray(np.arange(1000, dtype="i8"), urlpath=os.path.join(root, "w.b2nd"), chunks=(100,), mode="w")
    sub = os.path.join(root, "sub")
    os.makedirs(sub)
    a = blosc2.asarray(np.zeros(10), urlpath=os.path.join(sub, "v.b2nd"), mode="w")
    a.vlmeta["y"] = {"k": 1}
    mnt = h.mount(root)
    ds = os.path.join(mnt, "w.b2nd")
    sh(f"echo hello > '{ds}/vlmeta/x'")
    sh(f"sed -i 's/1/2/' '{mnt}/sub/v.b2nd/attrs/y'")
    with open(os.path.join(ds, "data"), "r+b") as f:
        f.seek(8 * 5)
        f.write(np.array([-5], dtype="i8").tobytes())
    back = blosc2.open(os.path.join(root, "w.b2nd"))
    check_equal(bytes(back.schunk.vlmeta.get_vlmeta("x")), b"hello\n", "vlmeta/x read back by python-blosc2")
    check_equal(int(back[5]), -5, "data[5] read back by python-blosc2")
    v = blosc2.open(os.path.join(sub, "v.b2nd"))
    check_equal(v.vlmeta["y"], {"k": 2}, "attrs/y read back")
    for what, fn in (("mkdir", lambda: os.mkdir(os.path.join(mnt, "new"))),
                     ("create", lambda: open(os.path.join(mnt, "new.txt"), "w")),
                     ("unlink a dataset", lambda: os.unlink(os.path.join(mnt, "sub", "v.b2nd"))),
                     ("rmdir", lambda: os.rmdir(os.path.join(mnt, "sub"))),
                     ("rename", lambda: os.rename(os.path.join(mnt, "w.b2nd"), os.path.join(mnt, "z.b2nd")))):
        try:
            fn()
            check(False, f"{what} in the collection's own directory succeeded")
        except OSError as e:
            check(e.errno in (errno.EPERM, errno.EISDIR) if what == "unlink a dataset" else e.errno == errno.EPERM,
                  f"{what}: {os.strerror(e.errno)}")
    h.unmount(mnt)
    ro = h.mount(root, ["-o", "ro"])
    try:
        os.mkdir(os.path.join(ro, "new"))
        check(False, "mkdir on a read-only collection succeeded")
    except OSError as e:
        check_equal(e.errno, errno.EROFS, "mkdir on a read-only collection")
    h.unmount(ro)


# Edits until the mount goes away, logging each vlmeta value once its close() succeeded.
EDIT_LOOP = r"""
import os, sys
ds, log_path = sys.argv[1], sys.argv[2]
log = open(log_path, "a", buffering=1)
i = 0
try:
    while True:
        fd = os.open(os.path.join(ds, "vlmeta", "k"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, b"value-%d" % i)
        finally:
            os.close(fd)
        log.write("%d\n" % i)
        fd = os.open(os.path.join(ds, "data"), os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, b"x" * 5000)
        finally:
            os.close(fd)
        i += 1
except OSError:
    pass
"""


def kill_during_commits(h):
    """kill -9 of a collection's daemon while a dataset deep in it is edited:
    the frame opens in python-blosc2 and holds the last value stored or the one in flight."""
    rng = random.Random(29)
    for number in range(4):
        root = h.new_dir("crash")
        os.makedirs(os.path.join(root, "sub"))
        frame = h.copy_fixture("metas-vlmetas.b2frame", os.path.join(root, "sub"))
        mnt = h.new_dir()
        log_path = os.path.join(h.workdir, f"crash-edits{number}.log")
        open(log_path, "w").close()
        daemon = h.start_foreground([root], mnt, what=f"round {number}: the mount")
        editor = None
        try:
            editor = subprocess.Popen([sys.executable, "-c", EDIT_LOOP, os.path.join(mnt, "sub", os.path.basename(frame)),
                                       log_path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.1, 0.6))
            daemon.send_signal(signal.SIGKILL)
            h.wait_killed(daemon, mnt, f"round {number}")
        finally:
            stop_process(daemon)
            h.detach(mnt)
            if editor is not None:
                wait_or_kill(editor)
        done = [int(x) for x in open(log_path).read().split()]
        last = done[-1] if done else -1
        allowed = {b"value-%d" % i for i in (last, last + 1) if i >= 0} | ({None} if last < 0 else set())
        check(frame_state(h, frame)["vlmeta"].get("k") in allowed, f"round {number}: vlmeta/k after {last}")
        schunk = blosc2.open(frame)
        check(len(schunk[:]) >= 0, "python-blosc2 reads the frame")


def other_user(h):
    """allow_other: another user reads a root-owned 0644 dataset of a root-owned
    collection and cannot change it (EACCES), nor the collection (EACCES/EPERM)."""
    from test_permissions import System, as_user, expect_denied, expect_reads_everything, write_attempts
    s = System()
    root = h.new_dir("shared")
    os.chmod(root, 0o755)
    frame = h.copy_fixture("metas-vlmetas.b2frame", root)
    os.chmod(frame, 0o644)
    before = read_file(frame)
    mnt = h.mount(root, ["-o", "allow_other"])
    ds = os.path.join(mnt, os.path.basename(frame))
    expect_reads_everything(s.other, ds, "another user on root's 0644 dataset")
    expect_denied(as_user(s.other, write_attempts(ds)), "another user on root's 0644 dataset")
    got = as_user(s.other, [("mkdir", "mkdir", [os.path.join(mnt, "x")]),
                            ("create", "create", [os.path.join(mnt, "y"), "y"])])
    check(all(v in ("EACCES", "EPERM") for v in got.values()), f"another user on the collection: {got}")
    h.unmount(mnt)
    check(read_file(frame) == before, "the dataset changed")
    s.restore()


def s3_prefix(h, s3):
    root = h.new_dir("s3folder")
    datasets = make_folder(h, root, hostile=False)
    s3.create_bucket("coll")
    s3.put_tree("coll", "lake", root)
    # Hostile keys: none of them may show or be read.
    evil = os.path.join(h.workdir, "evil.txt")
    with open(evil, "w") as f:
        f.write("evil\n")
    s3.put_object("coll", "escape.txt", evil)  # beside the prefix: never shown
    for key in ("lake/../escape.txt", "lake/a/../../b.txt", "lake//double.txt", "lake/./dot.txt", "lake/x/../y.txt"):
        # As is: curl would resolve the dots itself. The server may refuse or normalize some.
        s3._curl(["--path-as-is", "-T", evil, "-o", "/dev/null", f"{s3.url}/coll/{key}"])
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY)
    mnt = h.new_dir()
    r = subprocess.run([h.binary, "-o", f"s3_endpoint={s3.url}", "s3://coll/lake/", mnt], env=env,
                       capture_output=True, text=True, timeout=120)
    check_equal(r.returncode, 0, f"mount of an S3 prefix: {r.stderr}")
    h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
    names = sorted(os.listdir(mnt))
    j = description(mnt)
    print(f"  listed from the hostile keys: {sorted(set(names) - set(os.listdir(root)))}", flush=True)
    check(set(names) >= set(["collection.json"] + os.listdir(root)), f"the prefix's top: {names}")
    check_equal(j["open_datasets"], 0, "datasets open after ls")
    check_equal(j["type"], "S3 prefix", "collection.json's type")
    paths = {e["path"] for e in j["entries"]}
    check(not any("escape" in p or ".." in p.split("/") or "." in p.split("/") for p in paths),
          f"hostile keys show: {sorted(paths)}")
    for name in set(names) - set(os.listdir(root)) - {"collection.json", "zarr.json"}:  # what a server normalized
        check(name in ("double.txt", "dot.txt", "y.txt", "x", "a"), f"{name} shows")
    datasets.pop("no-suffix")  # remote places go by name
    check_equal(next(e for e in j["entries"] if e["path"] == "no-suffix")["type"], "file", "no-suffix on S3")
    same_as_single_mounts(h, root, mnt, datasets, "S3")
    check_equal(read_file(os.path.join(mnt, "README.md")), read_file(os.path.join(root, "README.md")), "README.md")
    expect_eio(os.path.join(mnt, "corrupt.b2nd"), "a corrupt dataset on S3")
    r = subprocess.run([h.binary, "-o", f"s3_endpoint={s3.url}", "--info", "s3://coll/lake/"], env=env,
                       capture_output=True, text=True, timeout=120)
    check_equal(r.returncode, 0, f"--info of an S3 prefix: {r.stderr}")
    check_equal(json.loads(r.stdout)["type"], "S3 prefix", "--info's type")
    h.unmount(mnt)


def main():
    h = Harness("collections")
    h.require_fuse()
    h.test("a local folder: every dataset as its own mount, files, links, no fifo, EIO for a corrupt one",
           local_tree, h)
    h.test("lazy and bounded: max_open, stable inode numbers, the listing follows the folder", lazy_and_bounded, h)
    h.test("a dataset removed or replaced (renamed over) under the mount: an open file reads its version or EIO, "
           "fresh opens the new one; the listing follows",
           replaced_and_removed, h)
    h.test("writes in a local collection read back by python-blosc2; its own directories refuse changes",
           local_writes, h)
    h.test("kill -9 during commits in a collection leaves frames python-blosc2 opens", kill_during_commits, h)
    h.test("allow_other: another user cannot change a root-owned 0644 dataset", other_user, h)
    try:
        s3 = SeaweedS3(h.workdir, ACCESS_KEY, SECRET_KEY)
    except RuntimeError as e:
        print(f"cannot run the S3 tests: {e}", flush=True)
        h.failed += 1
        h.finish()
    with s3:
        h.test("an S3 prefix (SeaweedFS): the same trees; hostile keys left out", s3_prefix, h, s3)
    h.finish()


if __name__ == "__main__":
    main()
