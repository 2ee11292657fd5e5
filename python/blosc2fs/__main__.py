"""`python -m blosc2fs ARGS` and the `blosc2fs` console script: the daemon
itself, run in this process's place, so that its options, output and exit
statuses are exactly those of the blosc2fs program."""

import os
import sys

from ._daemon import binary, daemon_environment
from ._errors import MountError


def main() -> None:
    try:
        program = binary()
    except MountError as e:
        print(e, file=sys.stderr)
        sys.exit(6)
    os.execve(program, ["blosc2fs"] + sys.argv[1:], daemon_environment())


if __name__ == "__main__":
    main()
