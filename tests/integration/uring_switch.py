"""The kernel's switch for FUSE over io_uring, as the integration tests set it.

/sys/module/fuse/parameters/enable_uring (Linux 6.14 and later) decides whether the
kernel offers io_uring to a FUSE mount made while it reads Y; mounts made before keep
what they got. Every test script runs its mounts over io_uring where the kernel allows
(Harness: `hold()` at the start, `release()` at the end, on every path), and
test_io_uring switches it off for a moment to check the fallback (`forced("N")`).

Several scripts may run at once (two test runs, a developer's beside CI) and a run
may be killed, so the value found is kept in a state file under a lock: the first
holder records it and switches io_uring on, the last one puts it back; holders that
died are dropped, and the value a killed run found is still the one put back.
Mounts made by other scripts meanwhile only get the one path or the other.
"""

import contextlib
import fcntl
import json
import os

PARAMETER = "/sys/module/fuse/parameters/enable_uring"
STATE = "/run/blosc2fs-tests-enable_uring.json"
LOCK = STATE + ".lock"


def read_parameter():
    """'Y', 'N', or None where the kernel has no such switch."""
    try:
        with open(PARAMETER) as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def write_parameter(value):
    with open(PARAMETER, "w") as f:
        f.write(value)


@contextlib.contextmanager
def _locked():
    with open(LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _load():
    try:
        with open(STATE) as f:
            state = json.load(f)
    except (FileNotFoundError, ValueError):
        return None
    state["holders"] = [pid for pid in state.get("holders", []) if _alive(pid)]
    return state


def _save(state):
    tmp = STATE + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f)
    os.replace(tmp, STATE)


def unavailable():
    """Why this process cannot switch io_uring on for its mounts, or None."""
    if read_parameter() is None:
        return f"this kernel has no FUSE over io_uring ({PARAMETER} is missing: Linux 6.14 or later)"
    if os.geteuid() != 0:
        return f"switching it on needs root ({PARAMETER})"
    return None


def hold():
    """Switches io_uring on for mounts made from now on, until release(). Returns
    what was found ('Y' or 'N')."""
    with _locked():
        state = _load() or {"original": read_parameter(), "holders": []}
        state["holders"].append(os.getpid())
        _save(state)
        write_parameter("Y")
        return state["original"]


def release():
    """Undoes hold(): the last holder puts back the value the first one found."""
    with _locked():
        state = _load()
        if state is None:
            return
        state["holders"] = [pid for pid in state["holders"] if pid != os.getpid()]
        if state["holders"]:
            _save(state)
            return
        write_parameter(state["original"])
        os.unlink(STATE)


@contextlib.contextmanager
def forced(value):
    """The switch at `value` for the block, then back to what it was; holds the lock
    meanwhile, so no other script's hold() or release() changes it under the block."""
    with _locked():
        found = read_parameter()
        write_parameter(value)
        try:
            yield
        finally:
            write_parameter(found)
