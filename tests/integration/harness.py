"""Shared harness of the integration tests: arguments, mounting, unmounting in
every path, a watchdog against hangs, and the "N passed, M failed" summary.

Each test script is run by ctest as
    BUILD/venv/bin/python SCRIPT --binary PATH --fixtures DIR --workdir DIR

BUILD/venv is the test venv (scripts/test-venv.sh): Debian's Python 3 with the pinned
python-blosc2, NumPy and msgpack of tests/python/requirements.txt.
"""

import argparse
import errno
import atexit
import glob
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback

import uring_switch

FUSERMOUNT = shutil.which("fusermount3") or "/usr/bin/fusermount3"
# How long a test waits for something that must happen (a mount appearing, a
# daemon exiting, a busy mount coming free) before it fails. Tests poll, so a
# fast machine never waits this long; a busy one may need it.
PATIENCE = 60


def wait_until(condition, seconds=PATIENCE, interval=0.05):
    """Polls condition until it is true (returns True) or seconds pass (False)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() >= deadline:
            return condition()
        time.sleep(interval)
    return True


def mount_points():
    """Mount point -> file system type of every mount this process sees, from
    /proc/self/mountinfo (os.path.ismount misses bind mounts within one file system)."""
    points = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if "-" not in fields:
                continue
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])  # \040: a space
            points[point] = fields[fields.index("-") + 1]
    return points


def is_mounted(path):
    return os.path.abspath(path) in mount_points()


def wheel_file():
    """The one blosc2fs-*.whl in $BLOSC2FS_WHEEL_DIR (the ctest test wheel.build,
    scripts/wheel.sh, makes it); exits saying why it cannot run otherwise."""
    directory = os.environ.get("BLOSC2FS_WHEEL_DIR", "")
    wheels = sorted(glob.glob(os.path.join(directory, "blosc2fs-*.whl"))) if directory else []
    if len(wheels) != 1:
        print(f"cannot run: want one blosc2fs-*.whl in $BLOSC2FS_WHEEL_DIR ({directory!r}), found {wheels}; "
              "the ctest test wheel.build (scripts/wheel.sh) makes it", flush=True)
        print("0 passed, 1 failed", flush=True)
        sys.exit(1)
    return wheels[0]


class TestFailure(Exception):
    pass


def parse_seeds(text):
    """Seeds from "1-40", "7" or "3,9-12" (the random tests' BLOSC2FS_*_SEEDS)."""
    seeds = []
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-")
            seeds.extend(range(int(a), int(b) + 1))
        elif part:
            seeds.append(int(part))
    return seeds


def check(condition, message):
    if not condition:
        raise TestFailure(message)


def check_equal(got, want, what):
    if got != want:
        g, w = repr(got), repr(want)
        if len(g) > 200:
            g = g[:200] + "..."
        if len(w) > 200:
            w = w[:200] + "..."
        raise TestFailure(f"{what}: got {g}, want {w}")


def read_file(path, piece=1 << 20):
    """Reads a whole file with os.read in pieces (as cat does)."""
    out = bytearray()
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            b = os.read(fd, piece)
            if not b:
                break
            out += b
    finally:
        os.close(fd)
    return bytes(out)


def read_across_change(path, change, changed, what, seconds=PATIENCE):
    """Reads the first half of `path` through one open file, runs `change()`
    (another program changes what it shows), polls `changed()` until it is
    true (a fresh open or a listing shows the change), then reads the rest
    through the same open file. Returns (the bytes read, whether the rest read
    EIO); any other error fails the test."""
    fd = os.open(path, os.O_RDONLY)
    try:
        half = os.fstat(fd).st_size // 2
        out = bytearray()
        while len(out) < half:
            b = os.read(fd, half - len(out))
            if not b:
                break
            out += b
        change()
        check(wait_until(changed, seconds, interval=0.2), f"{what}: the change never showed")
        try:
            while True:
                b = os.read(fd, 1 << 20)
                if not b:
                    break
                out += b
        except OSError as e:
            check_equal(e.errno, errno.EIO, f"{what}: reading the rest after the change")
            return bytes(out), True
        return bytes(out), False
    finally:
        os.close(fd)


def check_one_version(got, old, new, what):
    """`got` (from read_across_change) holds bytes of the old version only:
    all of it, or a beginning of it that ended with EIO; never new bytes."""
    data, eio = got
    half = len(old) // 2
    hint = " (its second half is the new version's)" if data[half:] and new[half:].startswith(data[half:]) else ""
    if eio:
        check(old.startswith(data), f"{what}: the {len(data)} bytes read before EIO are not the old version's{hint}")
    else:
        check(data == old, f"{what}: read without EIO, {len(data)} bytes that are not the old version's {len(old)}{hint}")


def gunzip(path):
    if not os.path.exists(path):
        return b""
    with gzip.open(path, "rb") as f:
        return f.read()


def daemon_pid(mnt):
    """The serving process of a mount: the blosc2fs whose last argument is it."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if len(args) >= 2 and args[-1] == b"" and args[-2] == mnt.encode() and b"blosc2fs" in args[0]:
            return int(entry)
    raise TestFailure(f"no daemon process found for {mnt}")


def process_gone(pid):
    """Whether process pid has exited: no longer there, or a zombie (this machine's
    init may be slow to reap the daemons it inherits)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def process_status_kib(pid, field):
    """A size line of /proc/PID/status ("VmHWM", "RssAnon", ...), in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise TestFailure(f"no {field} for process {pid}")


def stop_process(proc):
    """Kills proc unless it has exited, and reaps it."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=PATIENCE)


def wait_or_kill(proc, seconds=30):
    """Gives proc `seconds` to exit on its own, then kills it; reaps it."""
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        stop_process(proc)


class Harness:
    def __init__(self, title, watchdog_seconds=120):
        parser = argparse.ArgumentParser(description=title)
        parser.add_argument("--binary", required=True)
        parser.add_argument("--fixtures", required=True)
        parser.add_argument("--workdir", required=True)
        args = parser.parse_args()
        self.title = title
        self.binary = os.path.abspath(args.binary)
        self.fixtures = os.path.abspath(args.fixtures)
        # Older writers, other programs and edited frames, in the same schema.
        self.fixtures_extra = os.path.join(os.path.dirname(self.fixtures), "fixtures-extra")
        script = os.path.splitext(os.path.basename(sys.argv[0]))[0]
        self.workdir = os.path.join(os.path.abspath(args.workdir), script)
        self.watchdog_seconds = watchdog_seconds
        self.passed = 0
        self.failed = 0
        self.mounts = {}  # mountpoint -> FUSE connection id (st_dev minor) for aborting
        self.plain_mounts = []  # bind and tmpfs mounts (mount_plain), in the order made
        self._counter = 0
        self._lock = threading.Lock()
        atexit.register(self.unmount_all)
        self._hold_io_uring()
        # SIGTERM and SIGHUP (a timeout, a closed terminal) end the script through
        # sys.exit, so that atexit still unmounts. SIGKILL leaves the mounts to
        # the next run's cleanup below.
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, lambda number, frame: sys.exit(128 + number))
        # Leftovers of an earlier, killed run.
        self._unmount_stale()
        left = self._mounts_under_workdir()
        if left:  # removing the tree would reach through them
            print(f"cannot run: mounts under {self.workdir} will not go: {left}", flush=True)
            sys.exit(1)
        shutil.rmtree(self.workdir, ignore_errors=True)
        os.makedirs(self.workdir, exist_ok=True)
        # The daemon asks the python3 on its PATH for codec plugins (docs/codecs.md): in
        # the tests that is Debian's, which has none, whatever this machine's PATH finds
        # first (and found fast). Tests of plugins pass their own env.
        bin_dir = os.path.join(self.workdir, "daemon-bin")
        os.makedirs(bin_dir)
        os.symlink("/usr/bin/python3", os.path.join(bin_dir, "python3"))
        self.daemon_env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
        # A sanitizer build of the daemon (ctest's sanitizer.* runs of integration
        # scripts) writes its reports here; any report fails the script at finish().
        self.sanitizer_logs = os.environ.get("BLOSC2FS_SANITIZER_LOG_DIR")
        if self.sanitizer_logs:
            shutil.rmtree(self.sanitizer_logs, ignore_errors=True)
            os.makedirs(self.sanitizer_logs)
            self.daemon_env["ASAN_OPTIONS"] = f"log_path={self.sanitizer_logs}/asan:detect_leaks=0"
            self.daemon_env["UBSAN_OPTIONS"] = f"log_path={self.sanitizer_logs}/ubsan:print_stacktrace=1"

    def _hold_io_uring(self):
        """Every script's mounts get the kernel's requests over io_uring where the
        kernel allows it (uring_switch.py; BLOSC2FS_TEST_IO_URING=0: through /dev/fuse
        as the kernel's switch has it), and say which."""
        self.io_uring = False
        if os.environ.get("BLOSC2FS_TEST_IO_URING", "1") == "0":
            print(f"FUSE over io_uring: left as {uring_switch.PARAMETER} has it (BLOSC2FS_TEST_IO_URING=0)", flush=True)
            return
        why_not = uring_switch.unavailable()
        if why_not:
            print(f"FUSE over io_uring: not for these mounts: {why_not}", flush=True)
            return
        found = uring_switch.hold()
        atexit.register(uring_switch.release)
        self.io_uring = True
        print(f"FUSE over io_uring: on for these mounts ({uring_switch.PARAMETER} was {found}, put back at the end)",
              flush=True)

    # --- paths ---

    def frames_dir(self):
        return os.path.join(self.fixtures, "frames")

    def fixture_root(self, name):
        """fixtures/ or fixtures-extra/, whichever holds frame `name` (same layout)."""
        if os.path.lexists(os.path.join(self.fixtures, "frames", name)):
            return self.fixtures
        return self.fixtures_extra

    def frame(self, name):
        return os.path.join(self.fixture_root(name), "frames", name)

    def expect(self, name):
        with open(os.path.join(self.fixture_root(name), "expect", name + ".expect.json")) as f:
            return json.load(f)

    def expect_file(self, name, suffix):
        return os.path.join(self.fixture_root(name), "expect", name + suffix)

    def frame_names(self):
        return sorted(os.listdir(self.frames_dir()))

    def extra_frame_names(self):
        return sorted(os.listdir(os.path.join(self.fixtures_extra, "frames")))

    def copy_fixture(self, name, directory=None):
        """A writable copy of fixture frame `name` (file or sparse directory) in
        the work directory; returns its path."""
        src = self.frame(name)
        dst = os.path.join(directory or self.new_dir("copy"), name)
        if os.path.isdir(src):
            shutil.copytree(src, dst)
            for root, dirs, files in os.walk(dst):
                os.chmod(root, 0o755)
                for f in files:
                    os.chmod(os.path.join(root, f), 0o644)
        else:
            shutil.copyfile(src, dst)
            os.chmod(dst, 0o644)
        return dst

    def info(self, frame, env=None):
        """The frame as the project's own reader describes it (blosc2fs --info)."""
        r = self.run(["--info", frame], env=env)
        if r.returncode != 0:
            raise TestFailure(f"blosc2fs --info {frame} failed with status {r.returncode}: {r.stderr.strip()}")
        return json.loads(r.stdout)

    def cache_stats(self, mnt):
        """The mount's cache statistics (MOUNTPOINT/.blosc2fs-cache) as a dict of ints."""
        text = read_file(os.path.join(mnt, ".blosc2fs-cache")).decode()
        return {k: int(v) for k, v in (kv.split("=") for kv in text.split())}

    def new_dir(self, stem="mnt"):
        with self._lock:
            self._counter += 1
            path = os.path.join(self.workdir, f"{stem}{self._counter}")
        os.makedirs(path, exist_ok=True)
        return path

    # --- running the binary ---

    def run(self, args, timeout=60, **kwargs):
        """Runs the binary with args; returns CompletedProcess (text). env: the
        daemon's environment (default: daemon_env)."""
        if kwargs.get("env") is None:
            kwargs["env"] = self.daemon_env
        return subprocess.run([self.binary] + list(args), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL, **kwargs)

    def require_fuse(self):
        """Fails the whole script, saying why, when FUSE cannot work here."""
        problems = []
        if not os.path.exists("/dev/fuse"):
            problems.append("/dev/fuse does not exist")
        elif not os.access("/dev/fuse", os.R_OK | os.W_OK) and not os.path.exists(FUSERMOUNT):
            problems.append("/dev/fuse is not accessible and fusermount3 is missing")
        if not os.path.exists(FUSERMOUNT):
            problems.append("fusermount3 is missing (needed to unmount)")
        if not os.path.exists(self.binary):
            problems.append(f"the binary {self.binary} does not exist")
        if problems:
            print("cannot run: " + "; ".join(problems), flush=True)
            self.failed += 1
            self.finish()

    def mount(self, frame, options=(), mountpoint=None, timeout=60, env=None):
        """Mounts frame; returns the mount point. The binary returns once mounted.
        Frames inside the fixtures are always mounted read-only (-o ro last, so
        it wins): mounts are read-write by default and the tests run as root,
        who may write anything. Tests that write copy the frame first
        (copy_fixture). env: the daemon's environment (default: daemon_env)."""
        mnt = mountpoint or self.new_dir()
        options = list(options)
        if any(os.path.abspath(frame).startswith(root + os.sep) for root in (self.fixtures, self.fixtures_extra)):
            options += ["-o", "ro"]
        r = self.run(options + [frame, mnt], timeout=timeout, env=env)
        if r.returncode != 0:
            raise TestFailure(f"mount of {frame} failed with status {r.returncode}: {r.stderr.strip()}")
        if not os.path.ismount(mnt):
            raise TestFailure(f"blosc2fs returned 0 but {mnt} is not a mount point")
        self.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
        return mnt

    def start_foreground(self, args, mnt, stderr=subprocess.DEVNULL, env=None, what="the mount"):
        """Starts `blosc2fs -f ARGS... MNT` (the tests that signal or kill the
        daemon need its process) and returns it once MNT is mounted; a daemon
        that exits first, or a mount that does not appear, is a TestFailure
        (the daemon killed). The caller stops the daemon on every path."""
        daemon = subprocess.Popen([self.binary, "-f", *args, mnt], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=stderr, env=env)
        if not (wait_until(lambda: os.path.ismount(mnt) or daemon.poll() is not None, interval=0.01)
                and os.path.ismount(mnt)):
            stop_process(daemon)
            raise TestFailure(f"{what} did not appear (daemon status {daemon.returncode})")
        self.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
        return daemon

    def detach(self, mnt):
        """Detaches the mount of a killed daemon (lazily: a reader may still
        hold it) and forgets it."""
        subprocess.run([FUSERMOUNT, "-u", "-z", mnt], capture_output=True, timeout=30)
        self.mounts.pop(mnt, None)

    def unmount(self, mnt):
        """Unmounts mnt and waits for its daemon to exit: the commits of files
        released just before are on disk when this returns."""
        conn = self.mounts.pop(mnt, None)
        if not os.path.ismount(mnt):
            return
        try:
            pid = daemon_pid(mnt)
        except TestFailure:
            pid = None
        r = subprocess.run([FUSERMOUNT, "-u", mnt], capture_output=True, text=True, timeout=PATIENCE)
        if r.returncode != 0:
            print(f"  fusermount3 -u {mnt} failed ({r.stderr.strip()}); unmounting lazily", flush=True)
            self._abort(conn)
            subprocess.run([FUSERMOUNT, "-u", "-z", mnt], capture_output=True, text=True, timeout=PATIENCE)
        wait_until(lambda: not os.path.ismount(mnt))
        if pid:
            wait_until(lambda: process_gone(pid))

    def mount_plain(self, args, mountpoint):
        """Runs mount(8) with args (a bind or tmpfs mount on mountpoint) and
        remembers mountpoint, so that unmount_all removes it on every path."""
        r = subprocess.run(["mount"] + list(args), capture_output=True, text=True, timeout=PATIENCE)
        if is_mounted(mountpoint) and mountpoint not in self.plain_mounts:
            self.plain_mounts.append(mountpoint)
        if r.returncode != 0:
            raise TestFailure(f"mount {' '.join(args)} failed: {r.stderr.strip()}")

    def unmount_plain(self, mountpoint):
        """Unmounts a bind or tmpfs mount (every layer of it). A blosc2fs daemon
        whose mount just went may still hold a file there for a while (EBUSY):
        retried until PATIENCE runs out, then detached lazily and reported."""
        busy = ""

        def gone():
            nonlocal busy
            if not is_mounted(mountpoint):
                return True
            r = subprocess.run(["umount", mountpoint], capture_output=True, text=True, timeout=PATIENCE)
            busy = r.stderr.strip()
            return not is_mounted(mountpoint)

        try:
            if not wait_until(gone, interval=0.2):
                for _ in range(10):  # one layer per call
                    if not is_mounted(mountpoint):
                        break
                    subprocess.run(["umount", "-l", mountpoint], capture_output=True, timeout=PATIENCE)
                raise TestFailure(f"{mountpoint} stayed busy for {PATIENCE} s ({busy}); detached lazily")
        finally:
            if not is_mounted(mountpoint) and mountpoint in self.plain_mounts:
                self.plain_mounts.remove(mountpoint)

    def unmount_all(self):
        """Every mount this harness made: FUSE mounts first (their frames may
        sit on the plain mounts), then the plain mounts, newest first."""
        for mnt in list(self.mounts):
            try:
                self.unmount(mnt)
            except Exception as e:  # keep going: every mount must go
                print(f"  cannot unmount {mnt}: {e}", flush=True)
        for mnt in reversed(list(self.plain_mounts)):
            try:
                self.unmount_plain(mnt)
            except Exception as e:
                print(f"  cannot unmount {mnt}: {e}", flush=True)

    def _abort(self, conn):
        """Aborts a FUSE connection so that requests stuck on it fail at once.
        Mounts the FUSE control file system for the write when the machine has
        not (and unmounts it again). True when the connection was aborted."""
        if conn is None:
            return False
        ctl = "/sys/fs/fuse/connections"
        mounted_here = False
        if not os.path.exists(os.path.join(ctl, str(conn))) and not is_mounted(ctl):
            mounted_here = subprocess.run(["mount", "-t", "fusectl", "fusectl", ctl],
                                          capture_output=True, timeout=PATIENCE).returncode == 0
        try:
            with open(os.path.join(ctl, str(conn), "abort"), "w") as f:
                f.write("1")
            return True
        except OSError:
            return False
        finally:
            if mounted_here:
                subprocess.run(["umount", ctl], capture_output=True, timeout=PATIENCE)

    def wait_killed(self, daemon, mnt, what):
        """Waits for the SIGKILLed daemon of mnt. Killed while its notify thread
        invalidated an entry of a directory in which a writer's rename waited for
        the daemon's answer, it cannot exit: the kernel holds that thread on the
        directory's lock, which the rename holds until the connection ends, which
        needs the thread's /dev/fuse gone. Aborting the connection (what an
        administrator would do) frees both."""
        try:
            daemon.wait(timeout=15)
            return
        except subprocess.TimeoutExpired:
            pass
        if not self._abort(self.mounts.get(mnt)):
            raise TestFailure(f"{what}: the killed daemon did not exit, and its FUSE connection could not be aborted")
        daemon.wait(timeout=PATIENCE)
        print(f"  {what}: the killed daemon exited once its FUSE connection was aborted", flush=True)

    def _mounts_under_workdir(self):
        return sorted(point for point in mount_points() if point.startswith(self.workdir + os.sep))

    def _unmount_stale(self):
        """Detaches what a killed run left, deepest first: FUSE mounts with
        fusermount3, bind and tmpfs mounts with umount."""
        for _ in range(10):  # a point may carry several mounts
            points = mount_points()
            left = sorted((p for p in points if p.startswith(self.workdir + os.sep)), reverse=True)
            if not left:
                return
            for point in left:
                if points[point].startswith("fuse"):
                    subprocess.run([FUSERMOUNT, "-u", "-z", point], capture_output=True, timeout=PATIENCE)
                else:
                    subprocess.run(["umount", "-l", point], capture_output=True, timeout=PATIENCE)

    # --- tests ---

    def test(self, name, body, *args):
        """Runs one test; a watchdog aborts the mounts if it hangs."""
        timed_out = threading.Event()

        def on_timeout():
            timed_out.set()
            print(f"  {name}: no progress for {self.watchdog_seconds}s, aborting its mounts", flush=True)
            for mnt, conn in list(self.mounts.items()):
                self._abort(conn)

        timer = threading.Timer(self.watchdog_seconds, on_timeout)
        timer.daemon = True
        timer.start()
        started = time.time()
        try:
            body(*args)
            if timed_out.is_set():
                raise TestFailure("timed out")
            self.passed += 1
            print(f"PASS {name} ({time.time() - started:.2f}s)", flush=True)
        except Exception as e:
            self.failed += 1
            detail = str(e) if isinstance(e, TestFailure) else traceback.format_exc()
            if timed_out.is_set():
                detail = "timed out; " + detail
            print(f"FAIL {name}: {detail}", flush=True)
        finally:
            timer.cancel()
            self.unmount_all()

    def sanitizer_reports(self):
        """The reports a sanitizer build of the daemon wrote (none: an empty list)."""
        if not self.sanitizer_logs:
            return []
        reports = []
        for name in sorted(os.listdir(self.sanitizer_logs)):
            with open(os.path.join(self.sanitizer_logs, name), errors="replace") as f:
                reports.append(f"{name}:\n{f.read()[:6000]}")
        return reports

    def finish(self):
        self.unmount_all()
        reports = self.sanitizer_reports()
        if reports:
            self.failed += 1
            print("FAIL the sanitizer build of the daemon reported:\n" + "\n".join(reports), flush=True)
        left = self._mounts_under_workdir()
        if left:
            self.failed += 1
            print(f"FAIL mounts left behind: {left}", flush=True)
            self._unmount_stale()
        print(f"{self.passed} passed, {self.failed} failed", flush=True)
        sys.exit(1 if self.failed or not self.passed else 0)
