"""Self-containment of the Python wheel: in a minimal Debian bookworm
(`debootstrap --variant=minbase` with python3 and python3-venv only: no
libfuse3, libcurl, spdlog, fmt, libzfp or libopenjp2, no fuse3), with /dev,
/proc and /sys bound in, the wheel installs from the file alone, ldd of every
ELF file it installed finds every library (the system's only from the manylinux
set), its blosc2fs mounts a fixture exactly, `with blosc2fs.mount(...)` reads it
and unmounts, and a user other than root is told to install fuse3.

The chroot is made once and kept in $BLOSC2FS_CHROOT_DIR (BUILD/wheel-chroot),
with a stamp of how it was made, so a second run costs seconds; the bind mounts
are undone on every path (the harness's mount_plain), also those a killed run
left."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (PATIENCE, Harness, TestFailure, check, check_equal, gunzip, is_mounted,  # noqa: E402
                     mount_points, read_file, wheel_file)

FIXTURE = "b2nd-3d-f8.b2nd"
SUITE = "bookworm"
INCLUDE = "python3,python3-venv"
# What a machine without blosc2fs's build would lack: none of it may be in the chroot.
ABSENT_PACKAGES = ["libfuse3-3", "fuse3", "liburing2", "libnuma1", "libcurl4", "libcurl3-gnutls", "libspdlog1.10",
                   "libfmt9", "libzfp1", "libopenjp2-7"]
# The libraries a manylinux wheel may take from the system (auditwheel's policy).
SYSTEM_LIBRARIES = {"linux-vdso.so.1", "ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libstdc++.so.6",
                    "libgcc_s.so.1", "libz.so.1", "libexpat.so.1", "libresolv.so.2", "libpthread.so.0",
                    "libdl.so.2", "librt.so.1"}
VENV = "/opt/blosc2fs-venv"
ENV = ["env", "-i", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
       "LANG=C.UTF-8"]


def debian_mirror():
    """The Debian archive this machine's apt uses for bookworm (its sources)."""
    texts = []
    for path in ["/etc/apt/sources.list"] + sorted(
            os.path.join("/etc/apt/sources.list.d", n) for n in os.listdir("/etc/apt/sources.list.d")
            if n.endswith((".list", ".sources"))):
        if os.path.exists(path):
            with open(path) as f:
                texts.append(f.read())
    for text in texts:
        for stanza in re.split(r"\n\s*\n", text):  # deb822 .sources
            fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", stanza, re.M))
            if fields.get("Types", "").split()[:1] == ["deb"] and SUITE in fields.get("Suites", "").split() \
                    and "main" in fields.get("Components", "").split():
                return fields["URIs"].split()[0]
        for line in text.splitlines():  # one-line format
            m = re.match(r"\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+" + SUITE + r"\s+.*\bmain\b", line)
            if m:
                return m.group(1)
    return None


class Chroot:
    def __init__(self, h):
        self.h = h
        top = os.environ.get("BLOSC2FS_CHROOT_DIR") or os.path.join(h.workdir, "..", "..", "..", "wheel-chroot")
        self.top = os.path.abspath(top)
        self.root = os.path.join(self.top, SUITE)
        self.stamp = os.path.join(self.root, ".blosc2fs-chroot")

    def path(self, inside):
        return os.path.join(self.root, inside.lstrip("/"))

    def mounts_inside(self):
        """Mounts in the chroot, or in one debootstrap was making (it mounts /proc
        and /sys there while it works) when a run was killed."""
        trees = (self.root, self.root + ".new")
        return sorted((p for p in mount_points() if any(p == t or p.startswith(t + os.sep) for t in trees)),
                      reverse=True)

    def detach_leftovers(self):
        """What a killed run left mounted in the chroot, deepest first."""
        for _ in range(10):
            left = self.mounts_inside()
            if not left:
                return
            for point in left:
                subprocess.run(["umount", "-l", point], capture_output=True, timeout=PATIENCE)
        raise TestFailure(f"mounts in the chroot will not go: {self.mounts_inside()}")

    def ensure(self):
        """The cached chroot, made (again) when missing or made another way."""
        mirror = debian_mirror()
        if mirror is None:
            raise TestFailure(f"no Debian {SUITE} source with main in /etc/apt (needed by debootstrap)")
        recipe = f"debootstrap --variant=minbase --include={INCLUDE} {SUITE} {mirror}\n"
        if os.path.exists(self.stamp):
            with open(self.stamp) as f:
                if f.read() == recipe:
                    return False
        if not shutil.which("debootstrap"):
            raise TestFailure("debootstrap is missing (scripts/install-deps.sh installs it)")
        self.detach_leftovers()  # never remove a tree with /dev or /proc mounted in it
        fresh = self.root + ".new"
        shutil.rmtree(fresh, ignore_errors=True)
        os.makedirs(self.top, exist_ok=True)
        log = os.path.join(self.top, "debootstrap.log")
        with open(log, "w") as out:
            r = subprocess.run(["debootstrap", "--variant=minbase", f"--include={INCLUDE}", SUITE, fresh, mirror],
                               stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=800)
        if r.returncode != 0:
            with open(log) as f:
                tail = f.read()[-2000:]
            shutil.rmtree(fresh, ignore_errors=True)
            raise TestFailure(f"debootstrap failed with status {r.returncode}: {tail}")
        shutil.rmtree(self.root, ignore_errors=True)
        os.rename(fresh, self.root)
        with open(self.stamp, "w") as f:
            f.write(recipe)
        return True

    def bind_system(self):
        """/dev, /proc and /sys of this machine in the chroot, until the test ends
        (the harness unmounts them on every path)."""
        for d in ("dev", "proc", "sys"):
            target = self.path(d)
            if not is_mounted(target):
                self.h.mount_plain(["--bind", "/" + d, target], target)

    def run(self, args, user=None, timeout=300, check_rc=True):
        spec = [f"--userspec={user}"] if user else []
        r = subprocess.run(["chroot"] + spec + [self.root] + ENV + list(args), capture_output=True, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL)
        if check_rc and r.returncode != 0:
            raise TestFailure(f"in the chroot, {' '.join(args)} failed with status {r.returncode}: "
                              f"{(r.stderr or r.stdout).strip()[-2000:]}")
        return r


def minimal_chroot(h, c):
    made = c.ensure()
    print(f"  chroot {c.root} {'made by debootstrap' if made else 'reused'}", flush=True)
    r = c.run(["dpkg-query", "-W", "-f", "${Package} ${Status}\n"] + ABSENT_PACKAGES, check_rc=False)
    present = [line.split()[0] for line in r.stdout.splitlines() if line.endswith("install ok installed")]
    check_equal(present, [], "packages the wheel must not need, installed in the chroot")
    for package in ("python3", "python3-venv"):
        r = c.run(["dpkg-query", "-W", "-f", "${Status}", package], check_rc=False)
        check_equal(r.stdout, "install ok installed", f"{package} in the chroot")


def install_and_ldd(h, c, state):
    c.bind_system()
    wheel = wheel_file()
    inbox = c.path("/srv/wheel")
    shutil.rmtree(inbox, ignore_errors=True)
    os.makedirs(inbox)
    shutil.copy(wheel, inbox)
    shutil.rmtree(c.path(VENV), ignore_errors=True)
    c.run(["python3", "-m", "venv", VENV])
    c.run([f"{VENV}/bin/python", "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check",
           "--quiet", "/srv/wheel/" + os.path.basename(wheel)])
    site = c.run([f"{VENV}/bin/python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    elves = []
    for base, _, files in os.walk(c.path(site)):
        for name in files:
            path = os.path.join(base, name)
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    elves.append("/" + os.path.relpath(path, c.root))
    check(any(e.endswith("/blosc2fs/_bin/blosc2fs") for e in elves), f"the daemon among the ELF files: {elves}")
    check(len(elves) > 20, f"the vendored libraries among the ELF files ({len(elves)})")
    from_system = set()
    for elf in elves:
        r = c.run(["ldd", elf])
        check("not found" not in r.stdout, f"ldd {elf}: {r.stdout}")
        for line in r.stdout.splitlines():
            m = re.match(r"\s*(\S+)(?: => (\S+))?", line)
            if m and (m.group(2) or m.group(1)).startswith(("/lib", "/usr/lib")) or (m and "vdso" in m.group(1)):
                from_system.add(os.path.basename(m.group(1)))
    check(from_system <= SYSTEM_LIBRARIES, f"libraries from the chroot beyond the manylinux set: "
                                           f"{sorted(from_system - SYSTEM_LIBRARIES)}")
    print(f"  {len(elves)} ELF files installed; from the system: {', '.join(sorted(from_system))}", flush=True)
    state["installed"] = True


def fixture_in_chroot(h, c):
    """A copy of the fixture inside the chroot (the daemon sees only the chroot)."""
    frames = c.path("/srv/frames")
    os.makedirs(frames, exist_ok=True)
    shutil.copyfile(h.frame(FIXTURE), os.path.join(frames, FIXTURE))
    return "/srv/frames/" + FIXTURE


def check_exact(h, mnt):
    """The mount shows c-blosc2's bytes: data, array.npy, every chunk."""
    data = gunzip(h.expect_file(FIXTURE, ".data.gz"))
    check_equal(read_file(os.path.join(mnt, "data")), data, "data")
    npy = read_file(os.path.join(mnt, "array.npy"))
    check(npy.startswith(b"\x93NUMPY") and npy.endswith(gunzip(h.expect_file(FIXTURE, ".array.gz"))),
          "array.npy holds c-blosc2's array")
    expect = h.expect(FIXTURE)
    chunks = sorted(os.listdir(os.path.join(mnt, "chunks")))
    check_equal(len(chunks), expect["nchunks"], "number of chunks")
    joined = b"".join(read_file(os.path.join(mnt, "chunks", name)) for name in chunks)
    check_equal(joined, data, "chunks/ one after the other")
    check_equal(json.loads(read_file(os.path.join(mnt, "frame.json")))["nbytes"], expect["nbytes"], "nbytes")


def command_mounts_exactly(h, c, state):
    check(state.get("installed"), "the wheel is not installed (see above)")
    c.bind_system()
    frame = fixture_in_chroot(h, c)
    mnt = c.path("/srv/mnt")
    os.makedirs(mnt, exist_ok=True)
    r = c.run([f"{VENV}/bin/blosc2fs", "-o", "ro", frame, "/srv/mnt"], check_rc=False)
    check_equal(r.returncode, 0, f"blosc2fs in the chroot: {r.stderr.strip()}")
    check(is_mounted(mnt), f"{mnt} is mounted")
    h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
    check_exact(h, mnt)
    h.unmount(mnt)
    check(not is_mounted(mnt), "unmounted")


WITH_SCRIPT = r"""
import hashlib, json, os, sys
import blosc2fs
frame, = sys.argv[1:]
with blosc2fs.mount(frame, read_only=True) as m:
    point = str(m)
    out = {"data": hashlib.sha256((m / "data").read_bytes()).hexdigest(),
           "chunks": len(os.listdir(m / "chunks")),
           "info": blosc2fs.info(frame)["nchunks"],
           "mounted": os.path.ismount(point)}
with open("/proc/self/mountinfo") as f:
    out["left"] = [l.split()[4] for l in f if " fuse" in l and "blosc2fs" in l]
out["point_left"] = os.path.exists(point)
print(json.dumps(out))
"""


def with_block_reads(h, c, state):
    check(state.get("installed"), "the wheel is not installed (see above)")
    c.bind_system()
    frame = fixture_in_chroot(h, c)
    r = c.run([f"{VENV}/bin/python", "-c", WITH_SCRIPT, frame], check_rc=False, timeout=300)
    check_equal(r.returncode, 0, f"the with block in the chroot: {r.stderr.strip()}")
    out = json.loads(r.stdout)
    check(out["mounted"], "mounted inside the with block")
    check_equal(out["data"], hashlib.sha256(gunzip(h.expect_file(FIXTURE, ".data.gz"))).hexdigest(), "data")
    check_equal(out["chunks"], h.expect(FIXTURE)["nchunks"], "chunks")
    check_equal(out["info"], h.expect(FIXTURE)["nchunks"], "info()")
    check_equal(out["left"], [], "blosc2fs mounts left after the with block")
    check(not out["point_left"], "the temporary mount point is removed")


NOBODY_SCRIPT = r"""
import json, sys
import blosc2fs
try:
    blosc2fs.mount(sys.argv[1], sys.argv[2], read_only=True).unmount()
    print(json.dumps(["mounted"]))
except blosc2fs.MountError as e:
    print(json.dumps([type(e).__name__, e.status, str(e)]))
"""


def users_need_fuse3(h, c, state):
    """Without the fuse3 package (no fusermount3), a user other than root gets
    FuseMountFailed saying to install it; the command says the same."""
    check(state.get("installed"), "the wheel is not installed (see above)")
    c.bind_system()
    frame = fixture_in_chroot(h, c)
    os.chmod(c.path(frame), 0o644)
    mnt = c.path("/srv/user-mnt")
    os.makedirs(mnt, exist_ok=True)
    os.chmod(mnt, 0o777)
    r = c.run([f"{VENV}/bin/python", "-c", NOBODY_SCRIPT, frame, "/srv/user-mnt"], user="65534:65534",
              check_rc=False)
    check_equal(r.returncode, 0, f"the probe as nobody: {r.stderr.strip()}")
    name, status, line = json.loads(r.stdout)
    check_equal((name, status), ("FuseMountFailed", 5), f"nobody's mount without fuse3 ({line})")
    check("fuse3" in line and "fusermount3" in line, f"the line says to install fuse3: {line!r}")
    r = c.run([f"{VENV}/bin/blosc2fs", "-o", "ro", frame, "/srv/user-mnt"], user="65534:65534", check_rc=False)
    check_equal(r.returncode, 5, f"blosc2fs as nobody: {r.stderr.strip()}")
    check_equal(r.stderr.strip().splitlines()[-1], line, "the command's last line is the exception's")
    check(not is_mounted(mnt), "nothing mounted")


def main():
    h = Harness("the Python wheel in a minimal bookworm chroot (debootstrap minbase, python3 only)",
                watchdog_seconds=850)
    h.require_fuse()
    if os.geteuid() != 0:
        print("cannot run: needs root (debootstrap, chroot, bind mounts)", flush=True)
        h.failed += 1
        h.finish()
    c = Chroot(h)
    c.detach_leftovers()
    state = {}
    try:
        h.test("a minimal bookworm chroot: python3 and python3-venv, none of the daemon's libraries",
               minimal_chroot, h, c)
        h.test("pip install --no-index --no-deps of the wheel alone; ldd finds every library",
               install_and_ldd, h, c, state)
        h.test("its blosc2fs mounts a fixture exactly", command_mounts_exactly, h, c, state)
        h.test("with blosc2fs.mount(...) reads it and unmounts", with_block_reads, h, c, state)
        h.test("without fuse3, a user other than root is told to install it", users_need_fuse3, h, c, state)
    finally:
        h.unmount_all()
        left = c.mounts_inside()
        if left:
            print(f"FAIL mounts left in the chroot: {left}", flush=True)
            h.failed += 1
            c.detach_leftovers()
    h.finish()


if __name__ == "__main__":
    main()
