"""Running the daemon the wheel carries: where it is, how a dict of options
becomes its command line, and which of its stderr lines is the failure."""

from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Union

from ._errors import MountError

PathLike = Union[str, "os.PathLike[str]"]
OptionValue = Union[str, int, float, bool, None, "os.PathLike[str]"]

#: The daemon's log lines in the foreground: "blosc2fs: HH:MM:SS.mmm LEVEL: text".
_LOG_LINE = re.compile(r"blosc2fs: \d\d:\d\d:\d\d\.\d{3} (trace|debug|info|warning|error|critical): (.*)")
_LOG_LEVELS = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
               "error": logging.ERROR, "critical": logging.CRITICAL}

logger = logging.getLogger("blosc2fs")


def binary() -> str:
    """The blosc2fs program inside this package."""
    path = Path(__file__).resolve().parent / "_bin" / "blosc2fs"
    if not os.access(path, os.X_OK):
        raise MountError(f"blosc2fs: the daemon {path} is missing from this installation: reinstall the wheel")
    return str(path)


def daemon_environment(base: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The daemon's environment: this one, with this interpreter's bin directory first
    on PATH. The daemon finds a codec plugin loaded at run time (OpenZL) by asking the
    python3 on its PATH for the blosc2_NAME package, as c-blosc2 does: so a plugin
    pip-installed beside this package is found (docs/codecs.md)."""
    env = dict(os.environ if base is None else base)
    bin_dir = os.path.dirname(sys.executable)
    env["PATH"] = bin_dir + (os.pathsep + env["PATH"] if env.get("PATH") else "")
    return env


def _escaped(text: str) -> str:
    # The daemon splits an -o list on commas; a backslash keeps one literally
    # (the same rule as fuse_opt and /etc/fstab's options).
    return text.replace("\\", "\\\\").replace(",", "\\,")


def option_arguments(read_only: Optional[bool], options: Optional[Mapping[str, OptionValue]]) -> List[str]:
    """-o arguments: read_only True/False is -o ro/-o rw (None: the daemon's
    default); {"key": value} is -o key=value, True or None is -o key, False
    leaves the key out. The daemon validates every key and value."""
    args: List[str] = []
    if read_only is not None:
        args += ["-o", "ro" if read_only else "rw"]
    for key, value in (options or {}).items():
        if value is False:
            continue
        if value is True or value is None:
            args += ["-o", _escaped(str(key))]
        else:
            value_text = os.fspath(value) if isinstance(value, os.PathLike) else str(value)
            args += ["-o", _escaped(str(key)) + "=" + _escaped(value_text)]
    return args


class StderrLines:
    """The daemon's stderr, line by line: log lines go to the `blosc2fs` logger
    at their level, and the last other line is kept: it is the failure the
    daemon reports ("blosc2fs: cannot mount FRAME: why")."""

    def __init__(self) -> None:
        self.failure: Optional[str] = None
        self.last: Optional[str] = None

    def feed(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\n")
        if not line.strip():
            return
        self.last = line
        match = _LOG_LINE.fullmatch(line)
        if match:
            logger.log(_LOG_LEVELS[match.group(1)], "%s", match.group(2))
        else:
            self.failure = line

    def message(self, status: int) -> str:
        if self.failure:
            return self.failure
        if self.last:
            return self.last
        if status < 0:
            return f"blosc2fs: the daemon was killed by signal {-status}"
        return f"blosc2fs: the daemon exited with status {status} and no message"
