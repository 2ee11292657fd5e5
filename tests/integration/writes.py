"""Helpers of the write tests: reading a frame back with the project's own
reader (blosc2fs --info and a fresh read-only mount), comparing states, and
running the tools people edit files with."""

import errno
import itertools
import os
import pty
import select
import subprocess
import time

from harness import PATIENCE, TestFailure, check, check_equal, read_file, wait_until


def frame_state(h, frame):
    """Everything a frame holds, read back through a fresh read-only mount:
    {"info": --info JSON, "vlmeta": {name: bytes}, "meta": {name: bytes},
     "attrs": {name: text}, "chunks": [bytes], "data": bytes}."""
    info = h.info(frame)
    mnt = h.mount(frame, ["-o", "ro"])
    try:
        state = {"info": info, "vlmeta": {}, "meta": {}, "attrs": {}, "chunks": []}
        for kind in ("vlmeta", "meta", "attrs"):
            d = os.path.join(mnt, kind)
            for name in sorted(os.listdir(d)):
                value = read_file(os.path.join(d, name))
                state[kind][name] = value.decode() if kind == "attrs" else value
        names = sorted(os.listdir(os.path.join(mnt, "chunks")))
        check_equal(names, ["%08d" % i for i in range(info["nchunks"])], "chunks/ listing of the frame read back")
        for name in names:
            state["chunks"].append(read_file(os.path.join(mnt, "chunks", name)))
        state["data"] = read_file(os.path.join(mnt, "data"))
        check(state["data"] == b"".join(state["chunks"]), "data is not the chunks one after the other")
        check_equal(len(state["data"]), info["nbytes"], "data size against --info nbytes")
        check_equal(sorted(v["name"] for v in info["vlmetalayers"]), sorted(state["vlmeta"]), "--info vlmetalayers")
        if os.path.exists(os.path.join(mnt, "array.npy")):
            state["npy"] = read_file(os.path.join(mnt, "array.npy"))
    finally:
        h.unmount(mnt)
    return state


def stored_chunks(h, frame):
    """Every chunk's stored bytes (raw/N.chunk), in order, through a fresh read-only mount."""
    mnt = h.mount(frame, ["-o", "ro"])
    try:
        raw = os.path.join(mnt, "raw")
        return [read_file(os.path.join(raw, name)) for name in sorted(os.listdir(raw))]
    finally:
        h.unmount(mnt)


def chunk_numbers(shape, chunks, region):
    """b2nd numbers (C order over the grid) of the chunks a region (a tuple of slices) touches."""
    grid = [-(-s // c) for s, c in zip(shape, chunks)]
    ranges = []
    for sl, s, c in zip(region, shape, chunks):
        start, stop, _ = sl.indices(s)
        ranges.append(range(start // c, (stop - 1) // c + 1) if stop > start else range(0))
    numbers = set()
    for index in itertools.product(*ranges):
        number = 0
        for i, g in zip(index, grid):
            number = number * g + i
        numbers.add(number)
    return numbers


def check_untouched(before, after, touched, what):
    """Chunks (lists of stored bytes) not in `touched` kept their bytes."""
    check_equal(len(after), len(before), f"{what}: chunk count")
    for n, (old, new) in enumerate(zip(before, after)):
        if n not in touched:
            check(old == new, f"{what}: chunk {n}, not touched, has new stored bytes")


def expect_state(before, after, vlmeta=None, meta=None, chunks=None, what=""):
    """The state after an edit is `before` with exactly the given changes:
    vlmeta / meta: {name: bytes, or None for removed}; chunks: the whole new
    list of chunks (None: unchanged)."""
    want_vl = dict(before["vlmeta"])
    for name, value in (vlmeta or {}).items():
        if value is None:
            want_vl.pop(name, None)
        else:
            want_vl[name] = value
    check_equal(sorted(after["vlmeta"]), sorted(want_vl), f"{what}: vlmetalayer names")
    for name, value in want_vl.items():
        check_equal(after["vlmeta"][name], value, f"{what}: vlmeta/{name}")
    want_meta = dict(before["meta"])
    want_meta.update(meta or {})
    check_equal(after["meta"], want_meta, f"{what}: metalayers")
    want_chunks = before["chunks"] if chunks is None else chunks
    check_equal(len(after["chunks"]), len(want_chunks), f"{what}: number of chunks")
    for i, (got, want) in enumerate(zip(after["chunks"], want_chunks)):
        check(got == want, f"{what}: chunk {i} differs ({len(got)} vs {len(want)} bytes)")


def sh(command, cwd=None, expect_ok=True, timeout=60, env=None):
    """Runs a shell command line; returns CompletedProcess (text)."""
    r = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL, env=env)
    if expect_ok and r.returncode != 0:
        raise TestFailure(f"`{command}` failed with status {r.returncode}: {r.stderr.strip()}")
    return r


def vim_substitute(path, pattern, replacement, backupcopy="auto", cwd=None, binary=False):
    """vim -Es saving a substitution, with the given backupcopy (auto: the
    4913 probe and a rename of the file to NAME~). binary: vim -b, which
    keeps a missing final newline missing."""
    script = f"%s/{pattern}/{replacement}/g|wq"
    flags = "-b " if binary else ""
    sh(f"vim -Es {flags}-u NONE -i NONE -N -c 'set backupcopy={backupcopy} writebackup nobackup' "
       f"-c '{script}' '{path}'", cwd=cwd)


def nano_prepend(path, text):
    """Opens path in nano on a pseudo-terminal, types text at the start, saves (^O, Enter) and quits (^X).
    Each step waits until nano shows it has done the previous one, however slow the machine."""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm"
        os.execvp("nano", ["nano", "--ignorercfiles", "--nohelp", path])
    screen = bytearray()

    def wait_for_screen(marker, what):
        """Reads nano's output (so that it never blocks on a full terminal) until marker appears."""
        start = len(screen)
        deadline = time.monotonic() + PATIENCE
        while marker not in screen[start:]:
            if time.monotonic() >= deadline:
                raise TestFailure(f"nano: no {what} within {PATIENCE} s; the screen ends {bytes(screen[-300:])!r}")
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    screen.extend(os.read(fd, 65536))
                except OSError:
                    raise TestFailure(f"nano exited before its {what}; the screen ends {bytes(screen[-300:])!r}")

    exit_status = []

    def exited():
        try:
            ready, _, _ = select.select([fd], [], [], 0)
            if ready:
                os.read(fd, 65536)
        except OSError:
            pass
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            exit_status.append(status)
        return bool(done)

    try:
        wait_for_screen(os.path.basename(path).encode(), "title bar")
        os.write(fd, text.encode())
        os.write(fd, b"\x0f")  # ^O: write out
        wait_for_screen(b"File Name to Write", "file name prompt")
        os.write(fd, b"\r")    # keep the name
        wait_for_screen(b"Wrote", "report of the write")
        os.write(fd, b"\x18")  # ^X: exit
    finally:
        if not wait_until(exited):
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            os.close(fd)
            raise TestFailure("nano did not exit")
        os.close(fd)
    status = exit_status[0]
    check_equal(status, 0, "nano's exit status")


def write_errno(path, pieces, flags=os.O_WRONLY | os.O_TRUNC | os.O_CREAT):
    """Writes the pieces with os.write, then closes. Returns (stage, errno) of
    the first failure: stage is "open", "write N" or "close"; ("ok", 0) when
    everything worked."""
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        return "open", e.errno
    result = ("ok", 0)
    for i, piece in enumerate(pieces):
        try:
            os.write(fd, piece)
        except OSError as e:
            result = (f"write {i}", e.errno)
            break
    try:
        os.close(fd)
    except OSError as e:
        if result[0] == "ok":
            result = ("close", e.errno)
    return result


def expect_errno(what, fn, want):
    try:
        fn()
    except OSError as e:
        check_equal(errno.errorcode.get(e.errno, e.errno), errno.errorcode[want], f"errno of {what}")
        return
    raise TestFailure(f"{what} succeeded; want {errno.errorcode[want]}")


def file_bytes(frame):
    """The bytes on disk of a frame (a sparse frame: its chunks.b2frame)."""
    return read_file(os.path.join(frame, "chunks.b2frame") if os.path.isdir(frame) else frame)
