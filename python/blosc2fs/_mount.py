"""Mounting from Python: the daemon runs in the foreground as a child process,
tells its readiness through the systemd notification protocol (READY=1 on a
socket made here, named by $NOTIFY_SOCKET), and an unmount waits for it to
exit, i.e. to finish committing. Every decision (options, errors, read-only
or not) is the daemon's: this module only starts, waits and reports."""

from __future__ import annotations

import atexit
import ctypes
import errno
import json
import os
import select
import shutil
import socket
import subprocess
import tempfile
import threading
import warnings
from pathlib import Path
from types import TracebackType
from typing import Any, Dict, List, Mapping, Optional, Set, Type

from ._daemon import (OptionValue, PathLike, StderrLines, binary, daemon_environment, logger,
                      option_arguments)
from ._errors import MountError, UnmountFailed, error_for_status

_MNT_DETACH = 2  # <sys/mount.h>

# Mounts whose daemon this process still runs: a mount lives at most as long as
# the Python that made it (see _end_at_exit).
_live: Set["Mount"] = set()
_live_lock = threading.Lock()


def _fusermount() -> Optional[str]:
    # libfuse runs /usr/bin/fusermount3 first, then the one on PATH: the same here.
    if os.access("/usr/bin/fusermount3", os.X_OK):
        return "/usr/bin/fusermount3"
    return shutil.which("fusermount3")


def _detach(mountpoint: str, lazy: bool) -> None:
    """Unmounts: umount2(2) as root (no helper needed), else fusermount3 -u, as
    libfuse itself does. Raises UnmountFailed with the reason."""
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
        if libc.umount2(os.fsencode(mountpoint), _MNT_DETACH if lazy else 0) != 0:
            code = ctypes.get_errno()
            raise UnmountFailed(f"blosc2fs: cannot unmount {mountpoint}: {os.strerror(code)}"
                                + (" (a file on it is still open)" if code == errno.EBUSY else ""))
        return
    tool = _fusermount()
    if tool is None:
        raise UnmountFailed(f"blosc2fs: cannot unmount {mountpoint}: fusermount3 is missing "
                            "(install the distribution's fuse3 package)")
    r = subprocess.run([tool, "-u"] + (["-z"] if lazy else []) + [mountpoint], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if r.returncode != 0:
        why = r.stderr.decode("utf-8", "replace").strip() or f"fusermount3 exited with status {r.returncode}"
        raise UnmountFailed(f"blosc2fs: cannot unmount {mountpoint}: {why}")


class Mount:
    """A mounted frame, array, store or URL. `path` is the mount point; a Mount
    also works as a path itself (os.fspath(m), m / "array.npy"). In a `with`
    block it gives `path`, and leaving the block unmounts."""

    def __init__(self, frame: PathLike, mountpoint: Optional[PathLike] = None, *,
                 read_only: Optional[bool] = None, options: Optional[Mapping[str, OptionValue]] = None) -> None:
        self.frame = os.fspath(frame)
        self._own_dir = mountpoint is None
        self.path = Path(tempfile.mkdtemp(prefix="blosc2fs-")) if mountpoint is None else Path(mountpoint)
        self._process: Optional[subprocess.Popen[bytes]] = None
        self._stderr = StderrLines()
        self._reader: Optional[threading.Thread] = None
        self._mounted = False
        self._notify: Optional[socket.socket] = None
        self._notify_dir: Optional[str] = None
        try:
            self._start(option_arguments(read_only, options))
        except BaseException:
            self._cleanup()
            raise

    # --- starting ---

    def _start(self, option_args: List[str]) -> None:
        # The socket stays until the daemon has exited: it also sends STOPPING=1
        # at unmount, and warns when it cannot. Its directory is 0700: only this
        # user (and root) can reach it.
        self._notify_dir = tempfile.mkdtemp(prefix="blosc2fs-notify-")
        self._notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        address = os.path.join(self._notify_dir, "notify")
        self._notify.bind(address)
        env = dict(daemon_environment(), NOTIFY_SOCKET=address)
        args = [binary(), "-f"] + option_args + ["--", self.frame, os.fspath(self.path)]
        # A session of its own: a Ctrl-C meant for Python ends the with block,
        # which unmounts cleanly, instead of reaching the daemon as well.
        self._process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE, env=env, start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self._stop()
            raise

    def _wait_ready(self) -> None:
        """Until READY=1 (mounted) or the daemon's exit (its status and line)."""
        assert self._process is not None and self._process.stderr is not None
        notify = self._notify
        assert notify is not None
        stderr = self._process.stderr
        pending = b""
        stderr_open = True
        while True:
            readable, _, _ = select.select([notify] + ([stderr] if stderr_open else []), [], [],
                                           None if stderr_open else 0.1)
            if notify in readable:
                message = notify.recv(4096).decode("utf-8", "replace")
                if "READY=1" in message.split("\n"):
                    self._mounted = True
                    with _live_lock:
                        _live.add(self)
                    break
            if stderr_open and stderr in readable:
                data = os.read(stderr.fileno(), 65536)
                if not data:
                    stderr_open = False
                pending += data
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    self._stderr.feed(line)
            if not stderr_open:
                status = self._process.poll()
                if status is not None:
                    if pending:
                        self._stderr.feed(pending)
                    raise error_for_status(status, self._stderr.message(status))
        self._reader = threading.Thread(target=self._read_stderr, args=(pending,), name="blosc2fs-stderr",
                                        daemon=True)
        self._reader.start()

    def _read_stderr(self, pending: bytes) -> None:
        assert self._process is not None and self._process.stderr is not None
        for line in self._process.stderr:
            self._stderr.feed(pending + line)
            pending = b""
        if pending:
            self._stderr.feed(pending)

    def _stop(self) -> None:
        """Ends a daemon that has not reported ready (an interrupt while waiting)."""
        if self._process is None or self._process.poll() is not None:
            return
        self._process.terminate()  # libfuse's handler: the daemon unmounts and exits
        try:
            self._process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    # --- the mount as a path ---

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __truediv__(self, name: PathLike) -> Path:
        return self.path / name

    def __str__(self) -> str:
        return str(self.path)

    def __repr__(self) -> str:
        state = "mounted" if self._mounted else "unmounted"
        return f"<blosc2fs.Mount {self.frame!r} on {str(self.path)!r}, {state}>"

    @property
    def mounted(self) -> bool:
        """True from mount() until unmount() (or the daemon's exit)."""
        return self._mounted and self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> Optional[int]:
        """The daemon's process id."""
        return self._process.pid if self._process is not None else None

    # --- ending ---

    def unmount(self, *, lazy: bool = False) -> None:
        """Unmounts and waits until the daemon has committed what was written and
        exited. A mount with a file still open (a memory map of array.npy, say)
        raises UnmountFailed and stays mounted; lazy=True detaches it anyway,
        and the daemon then ends, committing, when the last such file closes
        (this call does not wait for that; a failure then is logged to the
        `blosc2fs` logger). A daemon that exits with a failure raises its
        MountError. A second call does nothing."""
        if not self._mounted:
            return
        assert self._process is not None
        if self._process.poll() is None:
            _detach(os.fspath(self.path), lazy)
        self._mounted = False
        if lazy and self._process.poll() is None:
            # Still serving the open files: a thread waits for its end. The
            # directory is no mount point any more: it goes now, in case this
            # process ends first.
            self._remove_own_dir()
            threading.Thread(target=self._finish, args=(True,), name="blosc2fs-wait", daemon=True).start()
            return
        self._finish(False)

    def _finish(self, in_background: bool) -> None:
        """Waits for the daemon's exit, cleans up, and reports a failure."""
        assert self._process is not None
        status = self._process.wait()
        if self._reader is not None:
            self._reader.join()
        self._cleanup()
        with _live_lock:
            _live.discard(self)
        if status != 0:
            error = error_for_status(status, self._stderr.message(status))
            if not in_background:
                raise error
            logger.error("%s", error)

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        try:
            self.unmount()
        except UnmountFailed as e:
            # Leaving the block never leaves a mount behind: a file still open
            # (an np.load(mmap_mode="r") array, say) keeps the daemon serving it.
            warnings.warn(f"{e}: detached lazily; the daemon serves the open files and ends when they close",
                          RuntimeWarning, stacklevel=2)
            self.unmount(lazy=True)

    def _cleanup(self) -> None:
        if self._notify is not None:
            self._notify.close()
            self._notify = None
        if self._notify_dir is not None:
            shutil.rmtree(self._notify_dir, ignore_errors=True)
            self._notify_dir = None
        self._remove_own_dir()

    def _remove_own_dir(self) -> None:
        if self._own_dir:
            try:
                os.rmdir(self.path)
            except OSError:
                pass


def _end_at_exit() -> None:
    """At interpreter exit, every mount still made by this process is unmounted
    and its daemon waited for (its commits done); a busy one is detached lazily
    and its daemon ends, committing, once this process has closed its files."""
    with _live_lock:
        mounts = list(_live)
    for m in mounts:
        try:
            if m.mounted:
                try:
                    m.unmount()
                except UnmountFailed:
                    m.unmount(lazy=True)
        except MountError as e:
            logger.error("%s", e)


atexit.register(_end_at_exit)


def mount(frame: PathLike, mountpoint: Optional[PathLike] = None, *, read_only: Optional[bool] = None,
          options: Optional[Mapping[str, OptionValue]] = None) -> Mount:
    """Mounts `frame` (a file, directory or URL, as the blosc2fs command takes it)
    on `mountpoint` (default: a fresh temporary directory, removed at unmount)
    and returns once the mount is usable.

    read_only: True for -o ro, False for -o rw, None for the daemon's default.
    options: the -o options of `blosc2fs -h` as a dict ({"cache_size": "256M",
    "allow_other": True}); the daemon validates them. A failure raises the
    MountError subclass of the daemon's exit status, with its one line."""
    return Mount(frame, mountpoint, read_only=read_only, options=options)


def _run_to_end(args: List[str], timeout: Optional[float] = None) -> bytes:
    """Runs the program until it exits; returns its stdout, or raises the
    MountError of its status with its one line (its log lines go to the
    `blosc2fs` logger)."""
    r = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=daemon_environment(), timeout=timeout)
    lines = StderrLines()
    for line in r.stderr.split(b"\n"):
        lines.feed(line)
    if r.returncode != 0:
        raise error_for_status(r.returncode, lines.message(r.returncode))
    return r.stdout


def info(frame: PathLike, *, options: Optional[Mapping[str, OptionValue]] = None) -> Dict[str, Any]:
    """frame.json of `frame` as a dict, without mounting (`blosc2fs --info`)."""
    stdout = _run_to_end([binary()] + option_arguments(None, options) + ["--info", os.fspath(frame)])
    result: Dict[str, Any] = json.loads(stdout)
    return result


# --- mounts that outlive this process (blosc2fs.dask) ---

def process_start(pid: int) -> Optional[int]:
    """When process `pid` started (clock ticks after boot: with the pid, one
    process for good, as a pid alone is not once it is reused), or None when
    it has ended (a zombie has ended too: only its parent's wait is missing)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])  # field 22 of proc(5), counted after the name


def daemon_of(mountpoint: str) -> Optional[int]:
    """The blosc2fs daemon serving `mountpoint` (an absolute path, as it was
    given to the program): the process of this package's program whose last
    argument it is. None when there is none."""
    program = os.fsencode(binary())
    target = os.fsencode(mountpoint)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        # argv ends with an empty string after its last NUL.
        if len(argv) >= 3 and argv[0] == program and argv[-2] == target and process_start(int(entry)) is not None:
            return int(entry)
    return None


def mount_in_background(frame: PathLike, mountpoint: PathLike, *, read_only: Optional[bool] = None,
                        options: Optional[Mapping[str, OptionValue]] = None,
                        timeout: Optional[float] = None) -> Optional[int]:
    """Mounts as the `blosc2fs` command does from a shell: returns once the
    mount is usable, with the daemon in the background, a child of no process
    here, so the mount outlives this Python (its log goes to syslog). Unmount
    it with unmount_path(). Returns the daemon's pid (None if it could not be
    found). A failure raises the MountError of the exit status, with its one
    line; `timeout` (seconds) bounds the wait for the mount."""
    path = os.path.abspath(os.fspath(mountpoint))
    args = [binary()] + option_arguments(read_only, options) + ["--", os.fspath(frame), path]
    try:
        _run_to_end(args, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise MountError(f"blosc2fs: cannot mount {os.fspath(frame)}: not mounted after {timeout:g} s") from None
    return daemon_of(path)


def unmount_path(mountpoint: PathLike, *, lazy: bool = False) -> None:
    """Unmounts whatever blosc2fs mount is on `mountpoint` (umount2(2) as root,
    else fusermount3 -u; lazy: detached even while files on it are open).
    Raises UnmountFailed with the reason; it does not wait for the daemon."""
    _detach(os.path.abspath(os.fspath(mountpoint)), lazy)
