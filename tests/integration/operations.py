"""Every operation a user's tool can send to an entry of a mount, and the table of
outcomes docs/operations.md documents for them (test_operations.py runs every row on
real mounts; test_model.py draws steps from the same table).

An operation is a function op(entry) that performs it on an Entry and raises OSError
with the errno it got. The table is read from docs/operations.md itself: the
defaults of every file and every directory, and for each entry kind (and case) the
outcomes that differ. Outcome cells:
    ok                succeeds; nothing stored changes
    changes: WHAT     succeeds and changes the dataset as WHAT says
    ERRNO             fails with that errno (EPERM, EACCES, ...)
    ERRNO at close    the operation goes through; the close() that ends it fails
                      with that errno and nothing stored changes
    —                 does not apply (a mount point has no sibling to rename onto)
On a read-only mount every operation the table marks as a change answers EROFS."""

import ctypes
import ctypes.util
import errno
import fcntl
import mmap
import os
import re
import stat
import termios

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
_libc.access.argtypes = [ctypes.c_char_p, ctypes.c_int]
AT_FDCWD = -100
RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT = 1, 2, 4

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "operations.md")


def _check(result):
    if result != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


class Entry:
    """One entry of a mounted tree: its path, its kind (and case), and the names an
    operation needs around it: a sibling that exists, another directory of the tree,
    and for a directory the name a user would create in it."""

    def __init__(self, path, kind, case="", sibling=None, elsewhere=None, new_name="newfile"):
        self.path, self.kind, self.case = path, kind, case
        self.sibling = sibling          # an existing entry of the same directory (rename over it)
        self.elsewhere = elsewhere      # another directory of the same tree (rename across: EXDEV)
        self.new_name = new_name        # directories: the name of a new file a user would make there
        self.directory = os.path.dirname(path)
        self.dataset = ""  # which dataset of the tree the entry belongs to (test_operations.dataset_values)
        self.read_only = False  # in a dataset that cannot change, in a writable mount

    @property
    def row(self):
        return f"{self.kind} ({self.case})" if self.case else self.kind

    def __repr__(self):
        return f"{self.row} {self.path}"


# --- the operations ---------------------------------------------------------

class CloseError(OSError):
    """The close() that ended an operation failed (a commit refused)."""


def _with_fd(path, flags, body=None):
    fd = os.open(path, flags)
    try:
        if body:
            body(fd)
    except BaseException:
        os.close(fd)
        raise
    try:
        os.close(fd)
    except OSError as e:
        raise CloseError(e.errno, e.strerror) from None


def op_stat(e):
    os.lstat(e.path)


def op_readdir(e):
    os.listdir(e.path)


def op_read(e):
    def body(fd):
        while os.read(fd, 1 << 20):
            pass
    _with_fd(e.path, os.O_RDONLY, body)


def op_read_past_end(e):
    """A read past the end of what the file holds: no bytes (files made as they are
    read show size 0, so the end is where reading stops)."""
    def body(fd):
        size = os.fstat(fd).st_size
        while os.pread(fd, 1 << 20, size):
            size += len(os.pread(fd, 1 << 20, size))
        got = os.pread(fd, 16, size + 4096)
        if got:
            raise OSError(errno.EDOM, f"read {len(got)} bytes past the end")
    _with_fd(e.path, os.O_RDONLY, body)


def op_direct_read(e):
    def body(fd):
        buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT may need
        try:
            os.preadv(fd, [buf], 0)
        finally:
            buf.close()
    _with_fd(e.path, os.O_RDONLY | os.O_DIRECT, body)


def op_open_rw(e):
    _with_fd(e.path, os.O_RDWR)


def op_write_same(e):
    """Writes back the first bytes the file holds, where they are."""
    def body(fd):
        head = os.pread(fd, 16, 0)
        os.pwrite(fd, head, 0)
    _with_fd(e.path, os.O_RDWR, body)


def op_write_past_end(e):
    def body(fd):
        os.pwrite(fd, b"\0", os.fstat(fd).st_size + 8)
    _with_fd(e.path, os.O_WRONLY, body)


def op_append(e):
    def body(fd):
        os.write(fd, b" ")
    _with_fd(e.path, os.O_WRONLY | os.O_APPEND, body)


def op_open_trunc(e):
    _with_fd(e.path, os.O_WRONLY | os.O_TRUNC)


def op_open_excl(e):
    _with_fd(e.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)


def op_truncate_same(e):
    os.truncate(e.path, os.stat(e.path).st_size)


def op_truncate_shorter(e):
    os.truncate(e.path, max(os.stat(e.path).st_size - 1, 0))


def op_truncate_longer(e):
    os.truncate(e.path, os.stat(e.path).st_size + 1)


def op_fsync(e):
    _with_fd(e.path, os.O_RDONLY, os.fsync)


def op_fallocate(e):
    _with_fd(e.path, os.O_RDWR, lambda fd: _check(_libc.fallocate(fd, 0, 0, 1)))


# A directory outside every mount, for copy_file_range's other end (set by the test).
COPY_TARGET_DIR = "/tmp"


def op_copy_range(e):
    """copy_file_range from the entry to a file outside the mount."""
    def body(fd):
        out = os.open(os.path.join(COPY_TARGET_DIR, "copy-target"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.copy_file_range(fd, out, 16)
        finally:
            os.close(out)
    _with_fd(e.path, os.O_RDONLY, body)


def op_ioctl(e):
    _with_fd(e.path, os.O_RDONLY, lambda fd: fcntl.ioctl(fd, termios.TCGETS, bytes(64)))


def _seek(e, whence, where):
    """lseek(0, whence) must land at where(size); ENXIO only in a file shown empty."""
    def body(fd):
        size = os.fstat(fd).st_size
        try:
            at = os.lseek(fd, 0, whence)
        except OSError as err:
            if err.errno == errno.ENXIO and size == 0:
                return  # no data in a file shown empty, and its end is 0
            raise
        if at != where(size):
            raise OSError(errno.EDOM, f"lseek from 0 gave {at}, the size is {size}")
    _with_fd(e.path, os.O_RDONLY, body)


def op_seek_data(e):
    _seek(e, os.SEEK_DATA, lambda size: 0)


def op_seek_hole(e):
    _seek(e, os.SEEK_HOLE, lambda size: size)


def op_chmod(e):
    os.chmod(e.path, stat.S_IMODE(os.stat(e.path).st_mode))  # Linux has no lchmod: a symlink's target


def op_chown(e):
    st = os.lstat(e.path)
    os.chown(e.path, st.st_uid, st.st_gid, follow_symlinks=False)


def op_utimes(e):
    os.utime(e.path, (1_000_000_000, 1_000_000_000), follow_symlinks=False)


def op_getxattr(e):
    os.getxattr(e.path, "user.blosc2fs", follow_symlinks=False)


def op_listxattr(e):
    os.listxattr(e.path, follow_symlinks=False)


def op_setxattr(e):
    os.setxattr(e.path, "user.blosc2fs", b"1", follow_symlinks=False)


def op_removexattr(e):
    os.removexattr(e.path, "user.blosc2fs", follow_symlinks=False)


def op_statfs(e):
    os.statvfs(e.path)


def op_access_read(e):
    _check(_libc.access(e.path.encode(), os.R_OK))


def op_access_write(e):
    _check(_libc.access(e.path.encode(), os.W_OK))


def op_unlink(e):
    os.unlink(e.path)


def op_rmdir(e):
    os.rmdir(e.path)


def op_rename(e):
    os.rename(e.path, os.path.join(e.directory, "renamed"))


def op_rename_to_scratch(e):
    """An editor moving the file aside (vim's backup): NAME -> NAME~."""
    os.rename(e.path, e.path + "~")


def op_rename_over(e):
    os.rename(e.path, os.path.join(e.directory, e.sibling))


def op_rename_across(e):
    os.rename(e.path, os.path.join(e.elsewhere, os.path.basename(e.path)))


def _renameat2(e, flags):
    _check(_libc.renameat2(AT_FDCWD, e.path.encode(), AT_FDCWD, os.path.join(e.directory, e.sibling).encode(), flags))


def op_rename_noreplace(e):
    _renameat2(e, RENAME_NOREPLACE)


def op_rename_exchange(e):
    _renameat2(e, RENAME_EXCHANGE)


def op_rename_whiteout(e):
    """To a name no operation makes (a rename onto the name itself is the kernel's no-op:
    model seed 3850 renamed attrs/renamed to renamed)."""
    _check(_libc.renameat2(AT_FDCWD, e.path.encode(), AT_FDCWD, os.path.join(e.directory, "whiteout").encode(),
                           RENAME_WHITEOUT))


def op_link(e):
    os.link(e.path, os.path.join(e.directory, "linked"), follow_symlinks=False)


def op_opendir_fsync(e):
    _with_fd(e.path, os.O_RDONLY | os.O_DIRECTORY, os.fsync)


def op_create(e):
    _with_fd(os.path.join(e.path, e.new_name), os.O_WRONLY | os.O_CREAT | os.O_EXCL)


def op_create_scratch(e):
    _with_fd(os.path.join(e.path, ".newfile.swp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)


def op_mknod(e):
    os.mknod(os.path.join(e.path, e.new_name), stat.S_IFREG | 0o644)


def op_mkfifo(e):
    os.mkfifo(os.path.join(e.path, "newfifo"))


def op_mkdir(e):
    os.mkdir(os.path.join(e.path, "newdir"))


def op_symlink(e):
    os.symlink("target", os.path.join(e.path, "newlink"))


class Operation:
    def __init__(self, name, perform, applies, changes, what):
        self.name, self.perform, self.what = name, perform, what
        self.applies = applies  # "any", "file" or "directory"
        self.changes = changes  # a read-only mount answers EROFS

    def __repr__(self):
        return self.name


# The operations, in the order the table lists them. `changes`: what a read-only
# mount refuses with EROFS.
OPERATIONS = [
    Operation("stat", op_stat, "any", False, "lookup and getattr (`stat`, `ls -l`)"),
    Operation("access-r", op_access_read, "any", False, "access(R_OK)"),
    Operation("access-w", op_access_write, "any", True, "access(W_OK)"),
    Operation("statfs", op_statfs, "any", False, "statvfs (`df`)"),
    Operation("chmod", op_chmod, "any", True, "chmod to the mode shown"),
    Operation("chown", op_chown, "any", True, "chown to the owner shown"),
    Operation("utimes", op_utimes, "any", True, "set the times (`touch -d`)"),
    Operation("getxattr", op_getxattr, "any", False, "getxattr"),
    Operation("listxattr", op_listxattr, "any", False, "listxattr"),
    Operation("setxattr", op_setxattr, "any", True, "setxattr"),
    Operation("removexattr", op_removexattr, "any", True, "removexattr"),
    Operation("link", op_link, "any", True, "a hard link beside it (`ln`)"),
    Operation("rename", op_rename, "any", True, "rename to a new name in its directory (`mv`)"),
    Operation("rename-over", op_rename_over, "any", True, "rename onto an existing sibling"),
    Operation("rename-across", op_rename_across, "any", True, "rename into another directory of the tree"),
    Operation("rename-noreplace", op_rename_noreplace, "any", True, "renameat2 RENAME_NOREPLACE onto a sibling"),
    Operation("rename-exchange", op_rename_exchange, "any", True, "renameat2 RENAME_EXCHANGE with a sibling"),
    Operation("rename-whiteout", op_rename_whiteout, "any", True, "renameat2 RENAME_WHITEOUT to a new name"),
    Operation("unlink", op_unlink, "any", True, "unlink (`rm`)"),
    Operation("rmdir", op_rmdir, "any", True, "rmdir"),
    Operation("readdir", op_readdir, "any", False, "list (`ls`)"),
    # files
    Operation("read", op_read, "file", False, "open O_RDONLY, read to the end"),
    Operation("read-past-end", op_read_past_end, "file", False, "pread past the end: no bytes"),
    Operation("direct-read", op_direct_read, "file", False, "open O_DIRECT, read"),
    Operation("open-rw", op_open_rw, "file", True, "open O_RDWR, close without writing"),
    Operation("write-same", op_write_same, "file", True, "write back the first 16 bytes where they are"),
    Operation("write-past-end", op_write_past_end, "file", True, "pwrite one byte 8 bytes past the end"),
    Operation("append", op_append, "file", True, "open O_APPEND, write one byte"),
    Operation("open-trunc", op_open_trunc, "file", True, "open O_TRUNC, close (`: > f`)"),
    Operation("open-excl", op_open_excl, "file", False, "open O_CREAT|O_EXCL"),
    Operation("truncate-same", op_truncate_same, "file", True, "truncate to its size"),
    Operation("truncate-shorter", op_truncate_shorter, "file", True, "truncate one byte shorter"),
    Operation("truncate-longer", op_truncate_longer, "file", True, "truncate one byte longer"),
    Operation("fsync", op_fsync, "file", False, "open O_RDONLY, fsync"),
    Operation("fallocate", op_fallocate, "file", True, "open O_RDWR, fallocate one byte"),
    Operation("copy-range", op_copy_range, "file", False, "copy_file_range to a file outside the mount"),
    Operation("ioctl", op_ioctl, "file", False, "ioctl TCGETS (`isatty`)"),
    Operation("seek-data", op_seek_data, "file", False, "lseek SEEK_DATA from 0"),
    Operation("seek-hole", op_seek_hole, "file", False, "lseek SEEK_HOLE from 0"),
    # directories
    Operation("opendir-fsync", op_opendir_fsync, "directory", False, "open the directory, fsync it"),
    Operation("create", op_create, "directory", True, "create the file a user would make in it (O_EXCL)"),
    Operation("create-scratch", op_create_scratch, "directory", True,
              "create (O_CREAT|O_TRUNC) an editor's scratch file `.newfile.swp`"),
    Operation("mknod", op_mknod, "directory", True, "mknod a regular file of that name"),
    Operation("mkfifo", op_mkfifo, "directory", True, "mkfifo"),
    Operation("mkdir", op_mkdir, "directory", True, "mkdir"),
    Operation("symlink", op_symlink, "directory", True, "symlink"),
]
BY_NAME = {op.name: op for op in OPERATIONS}


def bytes_after(op, before):
    """A file's bytes after the byte operation `op` (a name above) on bytes `before`:
    what "changes: as written" stores."""
    return {"write-same": before, "write-past-end": before + bytes(8) + b"\0", "append": before + b" ",
            "open-trunc": b"", "truncate-same": before, "truncate-shorter": before[:-1],
            "truncate-longer": before + b"\0"}[op]


# --- the table of docs/operations.md ---------------------------------------

class Outcome:
    """What an operation must do: ok, a change, an errno (at once or at close)."""

    def __init__(self, text):
        self.text = text.strip()
        t = self.text
        self.change = None
        self.errno = None
        self.at_close = False
        # The kernel answers before blosc2fs does (also on read-only datasets of a
        # writable mount); before_erofs: even on a read-only mount.
        self.kernel = self.before_erofs = False
        if t in ("ok", "—"):
            pass
        elif t == "ok (kernel)":
            self.kernel = True
        elif t.startswith("changes:"):
            self.change = t[len("changes:"):].strip()
        else:
            m = re.fullmatch(r"(E[A-Z]+)( at close)?( \(kernel(, before EROFS)?\))?", t)
            if not m or not hasattr(errno, m.group(1)):
                raise ValueError(f"not an outcome: {t!r}")
            self.errno = getattr(errno, m.group(1))
            self.at_close = bool(m.group(2))
            self.kernel = bool(m.group(3))
            self.before_erofs = bool(m.group(4))

    @property
    def ok(self):
        return self.errno is None

    @property
    def answer(self):
        """What the operation answers, as the test writes it down: ok, EPERM, EINVAL at close;
        n/a where the operation has nothing to act on (a rename of a mount point onto a sibling)."""
        if self.text == "—":
            return "n/a"
        if self.change or self.text.startswith("ok"):
            return "ok"
        if self.errno is None:
            return "ok"
        return errno.errorcode[self.errno] + (" at close" if self.at_close else "")

    def __repr__(self):
        return self.text


def _table_rows(lines, start):
    """The rows (lists of cells) of the first markdown table at or after line `start`."""
    rows = []
    i = start
    while i < len(lines) and not lines[i].startswith("|"):
        i += 1
    while i < len(lines) and lines[i].startswith("|"):
        cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
        if not all(re.fullmatch(r":?-+:?", c) for c in cells):
            rows.append(cells)
        i += 1
    return rows[1:]  # without the header


def _section(lines, heading):
    for i, line in enumerate(lines):
        if line.strip() == heading:
            return i
    raise ValueError(f"docs/operations.md has no heading {heading!r}")


def _unquote(cell):
    return cell.strip().strip("`")


class Table:
    """docs/operations.md's defaults and per-kind outcomes."""

    def __init__(self, path=DOC):
        with open(path) as f:
            lines = f.read().splitlines()
        self.defaults = {}
        for heading, applies in (("### Every entry", "any"), ("### Every file", "file"),
                                 ("### Every directory", "directory")):
            for cells in _table_rows(lines, _section(lines, heading)):
                name = _unquote(cells[0])
                if name not in BY_NAME:
                    raise ValueError(f"{heading}: unknown operation {name!r}")
                self.defaults[(applies, name)] = Outcome(cells[1])
        self.kinds = {}  # row ("chunk (array)") -> (is directory, {op: Outcome})
        self.kind_names = set()
        for cells in _table_rows(lines, _section(lines, "## Entry kinds")):
            row = _unquote(cells[0]).replace("` (", " (")
            kind = row.split(" (")[0]
            directory = cells[1].strip() == "directory"
            overrides = {}
            for part in filter(None, (p.strip() for p in cells[3].split(";"))):
                names, _, outcome = part.partition(":")
                if not outcome:
                    raise ValueError(f"{row}: {part!r} is not 'operations: outcome'")
                for name in (_unquote(n) for n in names.split(",")):
                    if name not in BY_NAME:
                        raise ValueError(f"{row}: unknown operation {name!r}")
                    overrides[name] = Outcome(outcome)
            self.kinds[row] = (directory, overrides)
            self.kind_names.add(kind)

    def applies(self, op, directory):
        return op.applies == "any" or op.applies == ("directory" if directory else "file")

    def outcome(self, row, op, mount_read_only=False, dataset_read_only=False):
        """The outcome of `op` on an entry of table row `row` (None: does not apply), on a
        read-only mount, or on a dataset that cannot change in a writable mount."""
        directory, overrides = self.kinds[row]
        if not self.applies(op, directory):
            return None
        if op.name in overrides:
            found = overrides[op.name]
        else:
            found = self.defaults.get(("directory" if directory else "file", op.name)) or \
                self.defaults[("any", op.name)]
        if found.text == "—" or found.before_erofs:
            return found
        if mount_read_only:
            return Outcome("EROFS") if op.changes else found
        if dataset_read_only and not found.kernel and "read-only" not in row:
            return Outcome("EROFS") if op.changes else found
        return found
