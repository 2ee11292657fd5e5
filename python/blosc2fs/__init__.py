"""blosc2fs: mount Blosc2 frames, N-d arrays, stores and remote data as files.

    import blosc2fs
    with blosc2fs.mount("x.b2nd") as m:          # a fresh temporary mount point (a Path)
        a = np.load(m / "array.npy")
        (m / "attrs" / "note").write_text('"checked"')   # committed when the mount ends
    blosc2fs.info("x.b2nd")                       # frame.json as a dict, no mount

The wheel carries the blosc2fs daemon itself (the `blosc2fs` command, also
`python -m blosc2fs`); this package starts it and reports its exit status as
one exception class each, all subclasses of MountError. See docs/python.md.
"""

from ._errors import (FrameNotFound, FuseMountFailed, InternalError, MountError, MountPointUnusable, NotAFrame,
                      ServerUnreachable, UnmountFailed, UsageError)
from ._mount import Mount, info, mount

__all__ = [
    "mount", "info", "Mount",
    "MountError", "UsageError", "FrameNotFound", "NotAFrame", "MountPointUnusable", "FuseMountFailed",
    "InternalError", "ServerUnreachable", "UnmountFailed",
    "__version__",
]


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("blosc2fs")
    except Exception:  # not installed as a distribution (a source tree on sys.path)
        return "unknown"


__version__ = _version()
