"""The exceptions of blosc2fs: one class per exit status of the daemon.

The daemon decides what failed and says it in one line ("blosc2fs: cannot mount
FRAME: why"); an exception carries that line and the status, unchanged.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple, Type


class MountError(Exception):
    """A blosc2fs command failed. `status` is the daemon's exit status (negative:
    killed by that signal; None: no daemon status, as for a failed unmount) and
    `message` its one line, as the `blosc2fs` command prints it."""

    #: The exit status this class stands for (README "Exit statuses").
    STATUS: Optional[int] = None

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status if status is not None else self.STATUS

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> Tuple[Type["MountError"], Tuple[str, Optional[int]]]:
        # Pickled with its status: an exception raised in a dask worker (a
        # WorkerPlugin's setup, blosc2fs.dask) reaches the client whole.
        return (type(self), (self.message, self.status))


class UsageError(MountError):
    """1: a bad command line or option (an unknown or invalid key of `options`)."""

    STATUS = 1


class FrameNotFound(MountError):
    """2: FRAME does not exist or cannot be opened."""

    STATUS = 2


class NotAFrame(MountError):
    """3: FRAME is not Blosc2 data, or is corrupt beyond its header and index."""

    STATUS = 3


class MountPointUnusable(MountError):
    """4: the mount point is missing, not a directory, not accessible, or covers or lies inside the dataset."""

    STATUS = 4


class FuseMountFailed(MountError):
    """5: the FUSE mount itself failed (no /dev/fuse, no permission, no fusermount3:
    users other than root need the distribution's fuse3 package)."""

    STATUS = 5


class InternalError(MountError):
    """6: an internal error of the daemon (out of memory, the FUSE loop failed)."""

    STATUS = 6


class ServerUnreachable(MountError):
    """7: a URL's server could not be reached or kept failing: a retry later may work."""

    STATUS = 7


class UnmountFailed(MountError):
    """The unmount was refused (a file still open on the mount: EBUSY, say); the
    mount stays as it was. `message` is the refusal."""


_BY_STATUS: Dict[int, Type[MountError]] = {
    cls.STATUS: cls
    for cls in (UsageError, FrameNotFound, NotAFrame, MountPointUnusable, FuseMountFailed, InternalError,
                ServerUnreachable)
    if cls.STATUS is not None
}


def error_for_status(status: int, message: str) -> MountError:
    """The exception of a daemon that exited with `status`, saying `message`."""
    return _BY_STATUS.get(status, MountError)(message, status)
