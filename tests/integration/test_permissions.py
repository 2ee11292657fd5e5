"""Who may do what on a mount: other users get exactly the access the frame's
own permissions give them. default_permissions is always on, and the tree
shows the frame's owner, group and read/write bits, so the kernel refuses
what the frame's permissions refuse, even when the daemon (root) could write.

Real users and a group are created for the test (b2fs_perm_PID_*) and
removed afterwards on every path. For the mounts made by a user,
/etc/fuse.conf gets user_allow_other and /dev/fuse (when others may not use
it) mode 0666, until the script ends; both get back exactly what they had,
on every path. Needs root."""

import atexit
import grp
import hashlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import PATIENCE, Harness, TestFailure, check, check_equal, wait_until  # noqa: E402

CONTIGUOUS, SPARSE, EMPTY = "metas-vlmetas.b2frame", "sframe-zstd-f4.b2frame", "empty-with-vlmeta.b2frame"
PYTHON = "/usr/bin/python3"
FUSE_CONF = "/etc/fuse.conf"
FUSE_DEV = "/dev/fuse"

# Run as another user: attempts the operations given as JSON on argv[1] and
# prints, as JSON, "ok" or the errno name of each (a failure at close counts).
PROBE = r"""
import errno, json, os, sys
def run(op, a):
    if op == "read":
        with open(a[0], "rb") as f:
            f.read()
    elif op == "readall":
        bad = {}
        for root, dirs, files in os.walk(a[0], onerror=lambda e: bad.update({e.filename: errno.errorcode[e.errno]})):
            dirs.sort()
            if os.path.basename(root) in ("chunks", "raw"):
                files = sorted(files)[:3]
            for name in files:
                try:
                    with open(os.path.join(root, name), "rb") as f:
                        f.read()
                except OSError as e:
                    bad[os.path.join(root, name)] = errno.errorcode[e.errno]
        if bad:
            return json.dumps(bad)
    elif op == "append":
        fd = os.open(a[0], os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, b"appended")
        finally:
            os.close(fd)
    elif op == "overwrite":
        fd = os.open(a[0], os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, a[1].encode())
        finally:
            os.close(fd)
    elif op == "create":
        fd = os.open(a[0], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, a[1].encode())
        finally:
            os.close(fd)
    elif op == "rename":
        os.rename(a[0], a[1])
    elif op == "unlink":
        os.unlink(a[0])
    elif op == "truncate":
        os.truncate(a[0], int(a[1]))
    elif op == "touch":
        os.utime(a[0], None)
    elif op == "chmod":
        os.chmod(a[0], 0o666)
    elif op == "mkdir":
        os.mkdir(a[0])
    else:
        raise SystemExit("unknown op " + op)
    return "ok"
out = {}
for name, op, args in json.loads(sys.argv[1]):
    try:
        out[name] = run(op, args)
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps(out))
"""


class System:
    """Users, a group, /etc/fuse.conf and /dev/fuse's mode, put back on every path."""

    def __init__(self):
        tag = f"b2fs_perm_{os.getpid()}"
        self.group = tag + "_g"
        self.owner, self.other, self.member = tag + "_owner", tag + "_other", tag + "_member"
        self.users = []
        self.groups = []
        self.fuse_conf = None  # (existed, bytes)
        self.fuse_dev_mode = None
        atexit.register(self.restore)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, lambda *_: sys.exit(1))  # so that atexit runs
        self._run(["groupadd", self.group])
        self.groups.append(self.group)
        for user, extra in ((self.owner, []), (self.other, []), (self.member, ["-G", self.group])):
            self._run(["useradd", "-M", "-d", "/nonexistent", "-s", "/usr/sbin/nologin"] + extra + [user])
            self.users.append(user)

    @staticmethod
    def _run(cmd):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise TestFailure(f"{' '.join(cmd)} failed: {r.stderr.strip()}")

    def uid(self, user):
        return pwd.getpwnam(user).pw_uid

    def gid(self, group):
        return grp.getgrnam(group).gr_gid

    def allow_user_mounts(self):
        """user_allow_other in /etc/fuse.conf; /dev/fuse usable by others (fusermount3
        opens it with the user's rights; Debian's udev makes it 0666, containers may not)."""
        if self.fuse_conf is None:
            existed = os.path.exists(FUSE_CONF)
            self.fuse_conf = (existed, open(FUSE_CONF, "rb").read() if existed else b"")
            with open(FUSE_CONF, "ab") as f:
                f.write(b"\nuser_allow_other\n")
        mode = os.stat(FUSE_DEV).st_mode & 0o7777
        if self.fuse_dev_mode is None and mode & 0o006 != 0o006:
            self.fuse_dev_mode = mode
            os.chmod(FUSE_DEV, mode | 0o666)

    def restore(self):
        if self.fuse_conf is not None:
            existed, content = self.fuse_conf
            if existed:
                with open(FUSE_CONF, "wb") as f:
                    f.write(content)
            elif os.path.exists(FUSE_CONF):
                os.unlink(FUSE_CONF)
            self.fuse_conf = None
        if self.fuse_dev_mode is not None:
            try:
                os.chmod(FUSE_DEV, self.fuse_dev_mode)
            except OSError as e:
                print(f"  cannot restore the mode of {FUSE_DEV}: {e}", flush=True)
            self.fuse_dev_mode = None
        while self.users:
            subprocess.run(["userdel", self.users.pop()], capture_output=True)
        while self.groups:
            subprocess.run(["groupdel", self.groups.pop()], capture_output=True)


def as_user(user, attempts):
    """Runs attempts [(name, op, [args])] as `user`; returns {name: "ok" | "EACCES" | ...}."""
    r = subprocess.run(["runuser", "-u", user, "--", PYTHON, "-c", PROBE, json.dumps(attempts)],
                       capture_output=True, text=True, timeout=120, cwd="/")
    if r.returncode != 0:
        raise TestFailure(f"probe as {user} failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def frame_digest(frame):
    """Every byte of the frame (a sparse frame: every file of its directory) and its ownership."""
    h = hashlib.sha256()
    paths = [frame]
    if os.path.isdir(frame):
        paths = [os.path.join(frame, n) for n in sorted(os.listdir(frame))]
    for p in paths:
        st = os.stat(p)
        h.update(f"{os.path.basename(p)} {st.st_uid} {st.st_gid} {st.st_mode:o}\n".encode())
        if not os.path.isdir(p):
            with open(p, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def write_attempts(mnt):
    """Every kind of change, each on its own name so that one's success cannot hide another's."""
    vl, at = os.path.join(mnt, "vlmeta"), os.path.join(mnt, "attrs")
    data = os.path.join(mnt, "data")
    return [
        ("append to data", "append", [data]),
        ("overwrite data", "overwrite", [data, "x"]),
        ("truncate data", "truncate", [data, "0"]),
        ("overwrite chunks/00000000", "overwrite", [os.path.join(mnt, "chunks", "00000000"), "x"]),
        ("create chunks/N", "create", [os.path.join(mnt, "chunks", "00000099"), "x"]),
        ("overwrite raw/00000000.chunk", "overwrite", [os.path.join(mnt, "raw", "00000000.chunk"), "x"]),
        ("overwrite meta/", "overwrite", [os.path.join(mnt, "meta", sorted(os.listdir(os.path.join(mnt, "meta")))[0]), "x"]),
        ("create vlmeta/evil", "create", [os.path.join(vl, "evil"), "evil"]),
        ("create attrs/evil", "create", [os.path.join(at, "evil"), "1"]),
        ("create a scratch file", "create", [os.path.join(vl, ".evil.swp"), "x"]),
        ("overwrite vlmeta/answer", "overwrite", [os.path.join(vl, "answer"), "x"]),
        ("append to vlmeta/author", "append", [os.path.join(vl, "author")]),
        ("rename vlmeta/answer", "rename", [os.path.join(vl, "answer"), os.path.join(vl, "renamed")]),
        ("unlink vlmeta/author", "unlink", [os.path.join(vl, "author")]),
        ("unlink attrs/attrs", "unlink", [os.path.join(at, "attrs")]),
        ("touch data", "touch", [data]),
        ("mkdir", "mkdir", [os.path.join(mnt, "d")]),
    ]


def expect_denied(results, what, want="EACCES"):
    wrong = {k: v for k, v in results.items() if v != want}
    check(not wrong, f"{what}: want {want} for every attempt, got {wrong}")


def expect_allowed(results, what, names=None):
    wrong = {k: v for k, v in results.items() if v != "ok" and (names is None or k in names)}
    check(not wrong, f"{what}: want every attempt to succeed, got {wrong}")


def expect_reads_everything(user, mnt, what):
    r = as_user(user, [("read every file", "readall", [mnt])])
    check_equal(r["read every file"], "ok", f"{what}: files {user} could not read")


def modes(mnt):
    """(uid, gid, mode) of a file that takes writes, a read-only file and a directory."""
    out = {}
    for name in ("data", "frame.json", "vlmeta"):
        st = os.stat(os.path.join(mnt, name))
        out[name] = (st.st_uid, st.st_gid, st.st_mode & 0o7777)
    st = os.stat(mnt)
    out["."] = (st.st_uid, st.st_gid, st.st_mode & 0o7777)
    return out


def owned_copy(h, name, uid, gid, mode):
    """A copy of fixture `name` owned by uid:gid with `mode` (a sparse frame's
    directory: with search wherever it may be read)."""
    frame = h.copy_fixture(name)
    paths = [frame]
    if os.path.isdir(frame):
        paths += [os.path.join(frame, n) for n in os.listdir(frame)]
    for p in paths:
        os.chown(p, uid, gid)
        os.chmod(p, mode | ((mode & 0o444) >> 2) if os.path.isdir(p) else mode)
    return frame


def wait_for(condition, what):
    if not wait_until(condition):
        raise TestFailure(f"timed out after {PATIENCE} s waiting for {what}")


# --- the tests ---

def shared_root_frame(h, s):
    """root mounts a root-owned 0644 frame with allow_other: another user reads
    every file, and every write, create, rename and unlink fails with EACCES;
    the frame's bytes stay the same."""
    frame = owned_copy(h, CONTIGUOUS, 0, 0, 0o644)
    before = frame_digest(frame)
    mnt = h.mount(frame, ["-o", "allow_other"])
    check_equal(modes(mnt), {"data": (0, 0, 0o644), "frame.json": (0, 0, 0o444), "vlmeta": (0, 0, 0o755),
                             ".": (0, 0, 0o755)}, "owner and modes")
    expect_reads_everything(s.other, mnt, "root's 0644 frame")
    expect_denied(as_user(s.other, write_attempts(mnt)), "another user on root's 0644 frame")
    check_equal(as_user(s.other, [("chmod", "chmod", [os.path.join(mnt, "data")])]), {"chmod": "EPERM"}, "chmod")
    check(not os.path.exists(os.path.join(mnt, "vlmeta", "evil")), "vlmeta/evil appeared")
    check_equal(frame_digest(frame), before, "the frame while mounted")
    h.unmount(mnt)
    check_equal(frame_digest(frame), before, "the frame after unmount")


def user_frame_mounted_by_root(h, s):
    """A frame owned by a user, mounted by root with allow_other: that user may
    write it, nobody else; the files the commits make keep the user's ownership."""
    uid, gid = s.uid(s.owner), s.gid(s.owner)
    for name in (CONTIGUOUS, SPARSE, EMPTY):
        frame = owned_copy(h, name, uid, gid, 0o644)
        before = frame_digest(frame)
        mnt = h.mount(frame, ["-o", "allow_other"])
        check_equal(modes(mnt)["data"], (uid, gid, 0o644), f"{name}: data")
        attempts = write_attempts(mnt) if name == CONTIGUOUS else [
            ("create vlmeta/evil", "create", [os.path.join(mnt, "vlmeta", "evil"), "evil"]),
            ("append to data", "append", [os.path.join(mnt, "data")])]
        expect_denied(as_user(s.other, attempts), f"{name}: another user")
        expect_denied(as_user(s.member, attempts), f"{name}: a third user")
        check_equal(frame_digest(frame), before, f"{name}: the frame after refused writes")
        vl = os.path.join(mnt, "vlmeta")
        mine = [("create vlmeta/mine", "create", [os.path.join(vl, "mine"), "mine"]),
                ("touch data", "touch", [os.path.join(mnt, "data")])]
        if name != EMPTY:  # no chunksize to append with
            mine.append(("append to data", "append", [os.path.join(mnt, "data")]))
        if name == CONTIGUOUS:
            mine += [("rename vlmeta/answer", "rename", [os.path.join(vl, "answer"), os.path.join(vl, "renamed")]),
                     ("unlink vlmeta/author", "unlink", [os.path.join(vl, "author")])]
        expect_allowed(as_user(s.owner, mine), f"{name}: the owner")
        with open(os.path.join(vl, "mine"), "rb") as f:
            check_equal(f.read(), b"mine", f"{name}: vlmeta/mine")
        h.unmount(mnt)
        check(frame_digest(frame) != before, f"{name}: the owner's writes did not reach the frame")
        # Commits that replace the frame (a frame without data is rewritten and
        # renamed) or add chunk files must not hand it over to root.
        paths = [frame] + ([os.path.join(frame, n) for n in os.listdir(frame)] if os.path.isdir(frame) else [])
        for p in paths:
            st = os.stat(p)
            check_equal((st.st_uid, st.st_gid), (uid, gid), f"{name}: owner of {os.path.relpath(p, frame)}")
            check(st.st_mode & 0o022 == 0, f"{name}: {p} became writable by others: {oct(st.st_mode)}")


def group_writable_frame(h, s):
    """A group-writable frame (root:GROUP 0664): members may write, others may only read."""
    gid = s.gid(s.group)
    frame = owned_copy(h, CONTIGUOUS, 0, gid, 0o664)
    before = frame_digest(frame)
    mnt = h.mount(frame, ["-o", "allow_other"])
    check_equal(modes(mnt), {"data": (0, gid, 0o664), "frame.json": (0, gid, 0o444), "vlmeta": (0, gid, 0o775),
                             ".": (0, gid, 0o775)}, "owner and modes")
    expect_reads_everything(s.other, mnt, "group-writable frame")
    expect_denied(as_user(s.other, write_attempts(mnt)), "a user outside the group")
    check_equal(frame_digest(frame), before, "the frame after refused writes")
    vl = os.path.join(mnt, "vlmeta")
    expect_allowed(as_user(s.member, [("create vlmeta/ours", "create", [os.path.join(vl, "ours"), "ours"]),
                                      ("append to data", "append", [os.path.join(mnt, "data")]),
                                      ("rename vlmeta/answer", "rename", [os.path.join(vl, "answer"),
                                                                           os.path.join(vl, "renamed")])]),
                   "a member of the group")
    # chmod needs the owner even for members (the kernel's rule).
    check_equal(as_user(s.member, [("chmod", "chmod", [os.path.join(mnt, "data")])]), {"chmod": "EPERM"}, "chmod")
    h.unmount(mnt)
    check(frame_digest(frame) != before, "the member's writes did not reach the frame")
    st = os.stat(frame)
    check_equal((st.st_uid, st.st_gid, st.st_mode & 0o7777), (0, gid, 0o664), "the frame's ownership")


def follows_the_frame(h, s):
    """chmod and chown of the frame while mounted: the tree follows (on the
    periodic check), and access with it."""
    frame = owned_copy(h, CONTIGUOUS, 0, 0, 0o644)
    mnt = h.mount(frame, ["-o", "allow_other"])
    data = os.path.join(mnt, "data")
    expect_allowed(as_user(s.other, [("read", "read", [data])]), "reading root's 0644 frame")
    os.chmod(frame, 0o600)
    # Each inode's cached attributes are dropped by its own notification, sent after
    # the daemon's check: wait for both files rather than assume an order.
    wait_for(lambda: os.stat(data).st_mode & 0o777 == 0o600, "data to show mode 0600")
    wait_for(lambda: os.stat(mnt).st_mode & 0o777 == 0o700, "the root directory to show mode 0700 after chmod 600")
    check_equal(as_user(s.other, [("read", "read", [data])]), {"read": "EACCES"}, "reading a 0600 frame")
    uid = s.uid(s.other)
    os.chown(frame, uid, -1)
    wait_for(lambda: os.stat(data).st_uid == uid, "data to show the new owner")
    expect_allowed(as_user(s.other, [("read", "read", [data]),
                                     ("create vlmeta/now-mine", "create",
                                      [os.path.join(mnt, "vlmeta", "now-mine"), "x"])]), "the new owner")
    expect_denied(as_user(s.member, write_attempts(mnt)[:3]), "a user who is not the new owner")


def read_only_mounts(h, s):
    """-o ro, and a frame the mounting user may not write: no write bits anywhere."""
    frame = owned_copy(h, CONTIGUOUS, 0, 0, 0o666)
    mnt = h.mount(frame, ["-o", "ro,allow_other"])
    check_equal({k: v[2] for k, v in modes(mnt).items()},
                {"data": 0o444, "frame.json": 0o444, "vlmeta": 0o555, ".": 0o555}, "modes of a ro mount")
    expect_denied(as_user(s.other, write_attempts(mnt)[:3]), "writes on a ro mount", "EROFS")
    h.unmount(mnt)
    # The owner's own mount of a frame it may only read.
    mine = owned_copy(h, CONTIGUOUS, s.uid(s.owner), s.gid(s.owner), 0o444)
    mnt = user_mount(h, s, s.owner, mine)
    check_equal(modes(mnt)["data"][2], 0o444, "a frame its owner may not write")


def user_mount(h, s, user, frame, options=()):
    """`user` mounts `frame` (with allow_other, so the test can look) on a mount point it owns."""
    s.allow_user_mounts()
    mnt = h.new_dir()
    os.chown(mnt, s.uid(user), s.gid(user))
    r = subprocess.run(["runuser", "-u", user, "--", h.binary, "-o", "allow_other"] + list(options) + [frame, mnt],
                       capture_output=True, text=True, timeout=60, cwd="/")
    if r.returncode != 0:
        raise TestFailure(f"{user}'s mount failed with status {r.returncode}: {r.stderr.strip()}")
    check(os.path.ismount(mnt), f"{mnt} is not a mount point")
    h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
    return mnt


def non_root_mount(h, s):
    """A user mounts its own 0644 frame with allow_other: others read, only it writes."""
    uid, gid = s.uid(s.owner), s.gid(s.owner)
    frame = owned_copy(h, CONTIGUOUS, uid, gid, 0o644)
    before = frame_digest(frame)
    mnt = user_mount(h, s, s.owner, frame)
    check_equal(modes(mnt)["data"], (uid, gid, 0o644), "data")
    expect_reads_everything(s.other, mnt, "a user's own mount")
    expect_denied(as_user(s.other, write_attempts(mnt)), "another user on a user's own mount")
    check_equal(frame_digest(frame), before, "the frame after refused writes")
    expect_allowed(as_user(s.owner, [("create vlmeta/mine", "create", [os.path.join(mnt, "vlmeta", "mine"), "m"])]),
                   "the owner on its own mount")
    h.unmount(mnt)
    check(frame_digest(frame) != before, "the owner's write did not reach the frame")


def overrides(h, s):
    """uid=, gid= and umask= still override the frame's, as documented."""
    frame = owned_copy(h, CONTIGUOUS, 0, 0, 0o644)
    uid = s.uid(s.other)
    mnt = h.mount(frame, ["-o", f"allow_other,uid={uid},gid={s.gid(s.group)},umask=027"])
    check_equal(modes(mnt), {"data": (uid, s.gid(s.group), 0o640), "frame.json": (uid, s.gid(s.group), 0o440),
                             "vlmeta": (uid, s.gid(s.group), 0o750), ".": (uid, s.gid(s.group), 0o750)},
                "owner and modes with uid=, gid=, umask=027")
    expect_allowed(as_user(s.other, [("create vlmeta/given", "create", [os.path.join(mnt, "vlmeta", "given"), "g"])]),
                   "the user named by uid=")
    check_equal(as_user(s.owner, [("read", "read", [os.path.join(mnt, "data")])]), {"read": "EACCES"},
                "umask=027: others may not read")


def created_frames(h, s):
    """-o create makes the frame with the creating user's umask; the tree follows."""
    for sparse in (False, True):
        frame = os.path.join(h.new_dir("create"), "new.b2frame")
        mnt = h.new_dir()
        r = subprocess.run([h.binary, "-o", "create,allow_other" + (",sparse" if sparse else ""), frame, mnt],
                           capture_output=True, text=True, timeout=60, preexec_fn=lambda: os.umask(0o027))
        check_equal(r.returncode, 0, f"-o create ({r.stderr.strip()})")
        h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
        header = os.path.join(frame, "chunks.b2frame") if sparse else frame
        check_equal(os.stat(header).st_mode & 0o777, 0o640, "the new frame's mode (umask 027)")
        if sparse:
            check_equal(os.stat(frame).st_mode & 0o777, 0o750, "the new sparse frame's directory")
        check_equal({k: v[2] for k, v in modes(mnt).items()},
                    {"data": 0o640, "frame.json": 0o440, "vlmeta": 0o750, ".": 0o750}, "modes")
        check_equal(as_user(s.other, [("list", "read", [os.path.join(mnt, "frame.json")])]), {"list": "EACCES"},
                    "another user on a 0640 frame")
        with open(os.path.join(mnt, "data"), "wb") as f:
            f.write(b"\1" * 100000)
        h.unmount(mnt)
        if sparse:
            for n in os.listdir(frame):
                check_equal(os.stat(os.path.join(frame, n)).st_mode & 0o777, 0o640, f"mode of {n}")


def mount_options(mnt):
    """The options /proc/mounts shows for mount point `mnt`."""
    with open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 3 and parts[1] == mnt:
                return parts[3].split(",")
    raise TestFailure(f"{mnt} is not in /proc/mounts")


def fstab_and_unit_paths(h, s):
    """The ways an administrator mounts: an fstab line (mount(8) runs
    mount.fuse3, which runs blosc2fs from PATH; here a PATH of this process
    only, nothing is installed), a user mount from a `user` fstab line (mount(8)
    runs the helper as that user), and the systemd unit's `blosc2fs -f $OPTIONS
    FRAME MOUNTPOINT`. Each gets default_permissions and refuses others' writes."""
    helper = shutil.which("mount.fuse3", path="/usr/sbin:/sbin")
    check(helper is not None, "mount.fuse3 is missing (the fuse3 package)")
    bindir = h.new_dir("bin")
    os.symlink(h.binary, os.path.join(bindir, "blosc2fs"))
    env = {"PATH": bindir + ":/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/"}
    refused = [("create vlmeta/evil", "create", [None, "evil"]), ("append to data", "append", [None])]

    def attempts(mnt):
        return [(n, op, [os.path.join(mnt, "vlmeta", "evil") if op == "create" else os.path.join(mnt, "data")]
                 + a[1:]) for n, op, a in refused]

    # root: /srv/x.b2frame /mnt/x fuse.blosc2fs rw,users,allow_other,noauto,x-systemd.automount,_netdev 0 0
    frame = owned_copy(h, CONTIGUOUS, 0, 0, 0o644)
    before = frame_digest(frame)
    mnt = h.new_dir()
    r = subprocess.run([helper, frame, mnt, "-t", "fuse.blosc2fs", "-o",
                        "rw,users,allow_other,noauto,x-systemd.automount,_netdev"],
                       env=env, capture_output=True, text=True, timeout=60, cwd="/")
    check_equal(r.returncode, 0, f"mount.fuse3 ({r.stderr.strip()})")
    h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
    opts = mount_options(mnt)
    check("default_permissions" in opts and "allow_other" in opts, f"fstab mount options: {opts}")
    expect_denied(as_user(s.other, attempts(mnt)), "another user on an fstab mount")
    h.unmount(mnt)
    check_equal(frame_digest(frame), before, "the frame after an fstab mount")

    # A `user` fstab line mounted by that user.
    uid, gid = s.uid(s.owner), s.gid(s.owner)
    mine = owned_copy(h, CONTIGUOUS, uid, gid, 0o644)
    s.allow_user_mounts()
    mnt = h.new_dir()
    os.chown(mnt, uid, gid)
    r = subprocess.run(["runuser", "-u", s.owner, "--", "env", "PATH=" + env["PATH"], "HOME=/", helper, mine, mnt,
                        "-t", "fuse.blosc2fs", "-o", "rw,user,allow_other,noauto"],
                       capture_output=True, text=True, timeout=60, cwd="/")
    check_equal(r.returncode, 0, f"a user's mount.fuse3 ({r.stderr.strip()})")
    h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
    check("default_permissions" in mount_options(mnt), f"user fstab mount options: {mount_options(mnt)}")
    expect_denied(as_user(s.other, attempts(mnt)), "another user on a user's fstab mount")
    expect_allowed(as_user(s.owner, [("create vlmeta/mine", "create", [os.path.join(mnt, "vlmeta", "mine"), "m"])]),
                   "the owner on its fstab mount")
    h.unmount(mnt)

    # The systemd unit: blosc2fs -f $OPTIONS ${FRAME} %f, in the foreground.
    mnt = h.new_dir()
    daemon = subprocess.Popen([h.binary, "-f", "-o", "allow_other,cache_size=64M", frame, mnt],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: os.path.ismount(mnt) or daemon.poll() is not None, "the unit's mount")
        check(os.path.ismount(mnt), f"blosc2fs -f exited: {daemon.stderr.read() if daemon.poll() is not None else ''}")
        h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
        check("default_permissions" in mount_options(mnt), f"unit mount options: {mount_options(mnt)}")
        expect_denied(as_user(s.other, attempts(mnt)), "another user on the unit's mount")
        h.unmount(mnt)
        daemon.wait(timeout=60)
    finally:
        if daemon.poll() is None:
            h.unmount(mnt)
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
    check_equal(frame_digest(frame), before, "the frame after the unit's mount")


def main():
    h = Harness("who may do what on a mount")
    h.require_fuse()
    if os.geteuid() != 0:
        print("cannot run: needs root (it creates users and groups, and mounts with allow_other)", flush=True)
        h.failed += 1
        h.finish()
    for tool in ("useradd", "userdel", "groupadd", "groupdel", "runuser"):
        if not any(os.access(os.path.join(d, tool), os.X_OK) for d in ("/usr/sbin", "/sbin", "/usr/bin")):
            print(f"cannot run: {tool} is missing", flush=True)
            h.failed += 1
            h.finish()
    s = System()
    try:
        h.test("root's 0644 frame shared with allow_other: others read, every write EACCES", shared_root_frame, h, s)
        h.test("a user's frame mounted by root: that user writes, nobody else", user_frame_mounted_by_root, h, s)
        h.test("a group-writable frame: members write, others read", group_writable_frame, h, s)
        h.test("chmod and chown of the frame while mounted: the tree follows", follows_the_frame, h, s)
        h.test("read-only mounts show no write bits", read_only_mounts, h, s)
        h.test("a user's own mount with allow_other: the same for others", non_root_mount, h, s)
        h.test("uid=, gid=, umask= override", overrides, h, s)
        h.test("-o create: mode from the umask", created_frames, h, s)
        h.test("fstab (root and user mounts through mount.fuse3) and the systemd unit's command",
               fstab_and_unit_paths, h, s)
    finally:
        h.unmount_all()
        s.restore()
    h.finish()


if __name__ == "__main__":
    main()
