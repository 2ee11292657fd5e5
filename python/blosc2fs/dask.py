"""A dask.distributed worker plugin that mounts a dataset or a collection at
the same path on every worker (docs/dask.md):

    from distributed import Client
    from blosc2fs.dask import MountPlugin

    client = Client(cluster)
    client.register_plugin(MountPlugin("s3://bucket/lake/", "/mnt/lake", read_only=True,
                                       options={"s3_endpoint": "https://s3.example.org"}))
    ds = xarray.open_zarr("/mnt/lake", consolidated=False)   # on the workers: the same path everywhere

The workers of one host share one mount: the first to start mounts, the
others join it, and the last to leave unmounts. Who holds a mount is kept in a
small JSON file per mount point in a folder of this user on the host
(/tmp/blosc2fs-dask-UID/), changed only under an flock(2) lock, so a worker
killed at any moment leaves neither a held lock nor a holder that counts. The
daemon runs in the background, as the `blosc2fs` command leaves it, a child of
no worker: a worker's death does not take the mount from the others.

Credentials are the workers' own environment (AWS_ACCESS_KEY_ID and the
others of docs/remote.md, or a credentials file): the plugin carries none, so
none travels to the scheduler or shows in its repr or in the holders' file.

Needs dask.distributed: `pip install distributed` (or `blosc2fs[dask]`).
"""

from __future__ import annotations

try:
    from distributed import WorkerPlugin
except ImportError as e:  # `import blosc2fs` never gets here: only `import blosc2fs.dask` does
    raise ImportError(f"blosc2fs.dask needs dask.distributed ({e}): pip install distributed, "
                      "or pip install 'blosc2fs[dask]'") from e

import asyncio
import errno
import fcntl
import hashlib
import json
import logging
import os
import socket
import stat
import time
import uuid
from typing import Any, Dict, List, Mapping, Optional

from ._daemon import OptionValue, PathLike, option_arguments
from ._errors import MountError, MountPointUnusable, UnmountFailed
from ._mount import mount_in_background, process_start, unmount_path

logger = logging.getLogger("blosc2fs.dask")

#: How long setup waits for another worker of its host to finish mounting or
#: unmounting the same path, and for a mount to come up, by default.
DEFAULT_TIMEOUT = 300.0
#: How long the last worker out waits for the daemon to exit after the unmount
#: (it commits what a read-write mount still holds first).
DAEMON_EXIT_PATIENCE = 60.0


def _registry_dir() -> str:
    """This user's folder of holders' files on this host. /tmp, not a folder
    beside the mount point: that folder may be on a file system other hosts
    share (an NFS home), where each host has its own mounts and its own pids."""
    path = f"/tmp/blosc2fs-dask-{os.getuid()}"
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    # /tmp is everyone's: a folder someone else made (or a link) could feed us
    # holders, or take our lock.
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise MountError(f"blosc2fs: {path} is not a folder of this user's alone (mode 0700): remove it")
    return path


def _mount_entry(path: str) -> Optional[Dict[str, str]]:
    """The entry of /proc/self/mountinfo whose mount point is `path` (the
    topmost, when several are stacked), or None."""
    found = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if "-" not in fields:
                continue
            point = _unescape(fields[4])
            if point == path:
                dash = fields.index("-")
                found = {"fstype": fields[dash + 1], "source": _unescape(fields[dash + 2])}
    return found


def _unescape(text: str) -> str:
    # mountinfo writes a space, tab, newline and backslash as \\ooo.
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 4 <= len(text) and text[i + 1:i + 4].isdigit():
            out.append(chr(int(text[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _responds(path: str) -> bool:
    """False when the mount's daemon is gone (the kernel answers ENOTCONN,
    ECONNABORTED or ECANCELED). statfs, because the kernel always asks the daemon for it,
    where a stat may be answered from its attribute cache."""
    try:
        os.statvfs(path)
        return True
    except OSError as e:
        # ECANCELED: what a request gets over FUSE over io_uring as the
        # connection of a killed daemon is torn down.
        if e.errno in (errno.ENOTCONN, errno.ECONNABORTED, errno.ECANCELED):
            return False
        raise


class _Registry:
    """The holders' file of one mount point, read and rewritten under its
    lock: {"url", "options", "device", "daemon": [pid, start], "made_dir",
    "holders": [{"pid", "start", "token", "worker"}]}."""

    def __init__(self, mountpoint: str, timeout: float) -> None:
        digest = hashlib.sha256(os.fsencode(mountpoint)).hexdigest()[:16]
        stem = os.path.join(_registry_dir(), digest)
        self.path = stem + ".json"
        self.lock_path = stem + ".lock"
        self.mountpoint = mountpoint
        self.timeout = timeout
        self.fd = -1

    def __enter__(self) -> "_Registry":
        deadline = time.monotonic() + self.timeout
        while True:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                # Released by the kernel when the process dies, however it dies.
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() >= deadline:
                    raise MountError(f"blosc2fs: cannot mount on {self.mountpoint}: another process of this host "
                                     f"held {self.lock_path} for {self.timeout:g} s (mounting or unmounting it)")
                time.sleep(0.05)
                continue
            # The last one out removes the lock file while holding it: a lock
            # taken on a file no longer at its path locks nothing; take again.
            try:
                if os.stat(self.lock_path).st_ino == os.fstat(fd).st_ino:
                    self.fd = fd
                    return self
            except FileNotFoundError:
                pass
            os.close(fd)

    def __exit__(self, *exc: Any) -> None:
        os.close(self.fd)  # and with it the lock

    def read(self) -> Dict[str, Any]:
        try:
            with open(self.path) as f:
                state = json.load(f)
            if isinstance(state, dict) and isinstance(state.get("holders"), list):
                return state
        except (OSError, ValueError):
            pass  # none yet, or a write cut short: no holders
        return {"holders": []}

    def write(self, state: Dict[str, Any]) -> None:
        temporary = self.path + ".new"
        with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            json.dump(state, f)
        os.replace(temporary, self.path)

    def remove(self) -> None:
        """Removes the holders' file and the lock file (while holding the lock)."""
        for path in (self.path, self.lock_path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def _canonical(path: str) -> str:
    """The mount point as /proc/self/mountinfo names it (symbolic links
    resolved), on the worker's own host: a client on another host cannot."""
    return os.path.realpath(path)


def _alive(pid: int, start: int) -> bool:
    return process_start(pid) == start


class MountPlugin(WorkerPlugin):
    """Mounts `url` (a dataset, store or collection: a path, an http(s)://,
    s3:// or caterva2+http(s):// URL, as blosc2fs.mount() takes it) on
    `mountpoint` on every worker when it starts, and unmounts it when the
    worker closes or the plugin is removed. Workers of one host share one
    mount; the last one out unmounts it. `read_only` and `options` are those
    of blosc2fs.mount(). The mount point is made when missing (and removed by
    the last one out). `timeout` bounds, in seconds, the wait for another
    worker of the host and for the mount itself.

    A failure in setup raises the MountError of blosc2fs.mount(), with its one
    line; client.register_plugin() raises it in the client."""

    def __init__(self, url: PathLike, mountpoint: PathLike, *, read_only: Optional[bool] = None,
                 options: Optional[Mapping[str, OptionValue]] = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.url = os.fspath(url)
        self.mountpoint = os.path.abspath(os.fspath(mountpoint))
        self.read_only = read_only
        # The daemon validates them at mount; workers compare them as its
        # command-line words (_arguments).
        self.options = dict(options or {})
        self.timeout = timeout
        # One plugin per mount point: registering another for the same path
        # replaces this one (its teardown, then the new one's setup).
        self.name = f"blosc2fs-mount:{self.mountpoint}"
        self._token: Optional[str] = None

    def __repr__(self) -> str:
        return (f"MountPlugin({self.url!r}, {self.mountpoint!r}, read_only={self.read_only!r}, "
                f"options={self.options!r})")

    def _arguments(self) -> List[str]:
        return option_arguments(self.read_only, self.options)

    # --- the worker's life ---

    async def setup(self, worker: Any) -> None:
        # In a thread: waiting for another worker's mount, or our own, must not
        # stop the worker's event loop (its heartbeats).
        address = str(getattr(worker, "address", ""))
        await asyncio.get_running_loop().run_in_executor(None, self.join, address)

    async def teardown(self, worker: Any) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.leave)

    # --- what they do, also usable without a worker ---

    def join(self, worker: str = "") -> None:
        """Holds the mount for this process: mounts it when no live process of
        this host holds it, else counts this one in."""
        if self._token is not None:
            return
        self._path = _canonical(self.mountpoint)
        with _Registry(self._path, self.timeout) as registry:
            state = registry.read()
            holders = [h for h in state["holders"] if _alive(h["pid"], h["start"])]
            if not self._ours_and_up(state):
                # Live holders stay counted: a mount of theirs whose daemon
                # died, or that was unmounted by hand, is made again for them.
                try:
                    made_dir = self._mount_fresh(state, holders)
                except BaseException:
                    if not holders and not self._ours(state):
                        registry.remove()  # nothing here to remember
                    raise
                state = {"url": self.url, "options": self._arguments(), "device": os.stat(self._path).st_dev,
                         "daemon": self._daemon, "made_dir": made_dir or bool(state.get("made_dir")),
                         "holders": holders}
            elif state.get("options") != self._arguments():
                raise MountPointUnusable(f"blosc2fs: cannot mount {self.url} on {self._path}: it is mounted "
                                         f"there already with other options ({' '.join(state.get('options') or [])})")
            token = uuid.uuid4().hex
            pid = os.getpid()
            start = process_start(pid)
            assert start is not None
            holders.append({"pid": pid, "start": start, "token": token, "worker": worker})
            state["holders"] = holders
            registry.write(state)
            self._token = token

    def leave(self) -> None:
        """Lets go of the mount; the last live holder of the host unmounts it."""
        if self._token is None:
            return
        token, self._token = self._token, None
        self._path = _canonical(self.mountpoint)
        with _Registry(self._path, self.timeout) as registry:
            state = registry.read()
            holders = [h for h in state["holders"] if h.get("token") != token and _alive(h["pid"], h["start"])]
            if holders:
                state["holders"] = holders
                registry.write(state)
                return
            if self._ours(state):
                self._unmount(state)
            registry.remove()

    # --- helpers ---

    def _ours(self, state: Dict[str, Any]) -> bool:
        """Whether the mount point holds the blosc2fs mount the holders' file
        describes, of this URL (the device number changes at every mount)."""
        entry = _mount_entry(self._path)
        if entry is None or entry["fstype"] != "fuse.blosc2fs" or state.get("url") != self.url:
            return False
        try:
            return bool(os.stat(self._path).st_dev == state.get("device"))
        except OSError:
            return True  # its daemon is gone (ENOTCONN): still ours to take down

    def _ours_and_up(self, state: Dict[str, Any]) -> bool:
        return self._ours(state) and _responds(self._path)

    def _mount_fresh(self, state: Dict[str, Any], holders: List[Dict[str, Any]]) -> bool:
        """Mounts on a mount point that holds none of ours that works; returns
        whether the mount point was made here."""
        entry = _mount_entry(self._path)
        if entry is not None:
            if entry["fstype"] == "fuse.blosc2fs" and not _responds(self._path):
                # A blosc2fs mount whose daemon died (killed, out of memory):
                # every access fails with ENOTCONN until it is unmounted.
                logger.warning("%s: its daemon is gone; unmounting it and mounting %s again", self._path,
                               self.url)
                unmount_path(self._path, lazy=True)
            elif entry["fstype"] == "fuse.blosc2fs" and entry["source"] == self.url and not holders:
                # A mount of this URL that no live process of this host holds
                # (its holders' file lost, or made by hand): adopted as it is,
                # its options unchecked; the last one out unmounts it.
                logger.info("adopted the mount of %s on %s (%s)", self.url, self._path, socket.gethostname())
                self._daemon = None
                return False
            else:
                raise MountPointUnusable(f"blosc2fs: cannot mount {self.url} on {self._path}: "
                                         f"{entry['source']} ({entry['fstype']}) is mounted there")
        made_dir = False
        if not os.path.isdir(self._path):
            try:
                os.makedirs(self._path)
                made_dir = True
            except OSError as e:
                raise MountPointUnusable(f"blosc2fs: cannot mount {self.url}: cannot make the mount point "
                                         f"{self._path}: {e.strerror}") from None
        try:
            pid = mount_in_background(self.url, self._path, read_only=self.read_only, options=self.options,
                                      timeout=self.timeout)
        except BaseException:
            if made_dir:
                self._remove_dir()
            raise
        start = process_start(pid) if pid is not None else None
        self._daemon = [pid, start] if start is not None else None
        logger.info("mounted %s on %s (%s)", self.url, self._path, socket.gethostname())
        return made_dir

    def _unmount(self, state: Dict[str, Any]) -> None:
        try:
            unmount_path(self._path)
        except UnmountFailed as e:
            # A file still open on it (a process outside the cluster): it goes
            # from the tree now, and its daemon ends when that file closes.
            logger.warning("%s: detaching lazily", e)
            unmount_path(self._path, lazy=True)
        daemon = state.get("daemon")
        if daemon:
            deadline = time.monotonic() + DAEMON_EXIT_PATIENCE
            while _alive(daemon[0], daemon[1]) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _alive(daemon[0], daemon[1]):
                logger.warning("the daemon of %s (pid %d) is still running %g s after the unmount",
                               self._path, daemon[0], DAEMON_EXIT_PATIENCE)
        if state.get("made_dir"):
            self._remove_dir()
        logger.info("unmounted %s from %s", self.url, self._path)

    def _remove_dir(self) -> None:
        try:
            os.rmdir(self._path)
        except OSError:
            pass  # not empty, or busy: left as it is

    _daemon: Optional[List[Optional[int]]] = None
    _path = ""
