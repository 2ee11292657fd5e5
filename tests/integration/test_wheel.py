"""The Python wheel (scripts/wheel.sh, built by the ctest test wheel.build into
$BLOSC2FS_WHEEL_DIR) installed into a fresh venv, and its API run with real
mounts: a fixture frame, a python-blosc2 array (np.load of array.npy equals
python-blosc2's [:]), an edit committed at exit and read back by python-blosc2,
a remote frame from nginx, and each exception class from a real failure.

The script starts in the test venv, makes the fresh venv (pip install
--no-index --no-deps of the wheel alone), then runs itself again with the
fresh venv's Python, so that `import blosc2fs` is the installed wheel. NumPy and
python-blosc2, the references, come from the test venv through a .pth line
placed after the fresh venv's own packages."""

import glob
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness, TestFailure, check, check_equal, gunzip, is_mounted, read_file, wheel_file  # noqa: E402

FRESH_MARK = "BLOSC2FS_WHEEL_FRESH_VENV"
FIXTURE = "b2nd-3d-f8.b2nd"


def make_fresh_venv_and_rerun():
    """Stage 1, in the test venv: a fresh venv in a world-readable temporary
    directory (a test runs it as nobody), the wheel installed from the file
    alone, then this script again under its Python."""
    wheel = wheel_file()
    top = tempfile.mkdtemp(prefix="blosc2fs-wheel-test-")
    os.chmod(top, 0o755)
    venv = os.path.join(top, "venv")
    try:
        subprocess.run(["/usr/bin/python3", "-m", "venv", venv], check=True, timeout=300)
        python = os.path.join(venv, "bin", "python")
        r = subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check",
                            "--quiet", wheel], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            print(f"FAIL pip install --no-index --no-deps {os.path.basename(wheel)}: {r.stderr.strip()}", flush=True)
            print("0 passed, 1 failed", flush=True)
            sys.exit(1)
        print(f"PASS pip install --no-index --no-deps {os.path.basename(wheel)} into a fresh venv", flush=True)
        site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        import numpy  # the test venv's, for the .pth line
        with open(os.path.join(site, "zz-test-venv.pth"), "w") as f:
            f.write(os.path.dirname(os.path.dirname(numpy.__file__)) + "\n")
        env = dict(os.environ, **{FRESH_MARK: venv})
        r = subprocess.run([python, os.path.abspath(__file__)] + sys.argv[1:], env=env)
        sys.exit(r.returncode)
    finally:
        shutil.rmtree(top, ignore_errors=True)


# --- stage 2: under the fresh venv's Python ---

def installed_as_a_wheel(h):
    import blosc2fs
    venv = os.environ[FRESH_MARK]
    check(blosc2fs.__file__.startswith(venv + os.sep), f"blosc2fs comes from the fresh venv: {blosc2fs.__file__}")
    check_equal(blosc2fs.__version__, h.run(["-V"]).stdout.split()[1], "__version__ is the daemon's version")
    package = os.path.dirname(blosc2fs.__file__)
    check(os.path.exists(os.path.join(package, "py.typed")), "py.typed is installed")
    for command in ([os.path.join(venv, "bin", "blosc2fs"), "-V"], [sys.executable, "-m", "blosc2fs", "-V"]):
        r = subprocess.run(command, capture_output=True, text=True, timeout=60)
        check_equal(r.returncode, 0, f"{' '.join(command)}: {r.stderr.strip()}")
        check(r.stdout.startswith("blosc2fs " + blosc2fs.__version__), f"{' '.join(command)} says {r.stdout!r}")
    # The console script is the program itself: the same exit statuses.
    r = subprocess.run([os.path.join(venv, "bin", "blosc2fs"), "--info", "/nonexistent/x.b2nd"],
                       capture_output=True, text=True, timeout=60)
    check_equal(r.returncode, 2, "blosc2fs --info of a missing frame")
    check_equal(len(r.stderr.strip().splitlines()), 1, f"one line: {r.stderr!r}")
    dist = glob.glob(os.path.join(os.path.dirname(package), "blosc2fs-*.dist-info"))[0]
    # blosc2fs.dask is in the wheel; distributed is its extra, never a dependency (docs/dask.md).
    check(os.path.exists(os.path.join(package, "dask.py")), "blosc2fs/dask.py is installed")
    with open(os.path.join(dist, "METADATA")) as f:
        metadata = f.read()
    check("Provides-Extra: dask" in metadata, "METADATA provides the extra dask")
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    check(requires and all("extra ==" in line for line in requires), f"only extras require anything: {requires}")
    licenses = os.path.join(dist, "licenses")
    check(os.path.exists(os.path.join(licenses, "LICENSE")), "LICENSE in the dist-info")
    with open(os.path.join(licenses, "vendored", "vendored.txt")) as f:
        table = f.read()
    # libfuse is inside the daemon (third_party/libfuse, LGPL-2.1); liburing and libnuma, which its
    # FUSE over io_uring needs, are vendored from Debian.
    check("libfuse3" not in table, "vendored.txt names no libfuse3: it is linked into the daemon")
    check("liburing2\t" in table and "libnuma1\t" in table, "vendored.txt names liburing2 and libnuma1")
    for lib in glob.glob(os.path.join(os.path.dirname(package), "blosc2fs.libs", "*")):
        check(os.path.basename(lib) in table, f"{os.path.basename(lib)} is listed in vendored.txt")
    for name in ("liburing2.copyright", "libnuma1.copyright"):
        check(os.path.exists(os.path.join(licenses, "vendored", name)), f"vendored/{name}")
    for name in ("LICENSE", "LGPL2.txt"):
        check(os.path.exists(os.path.join(licenses, "third_party", "libfuse", name)), f"libfuse's {name}")


def fixture_frame(h):
    """A fixture (read-only, in place): data and array.npy are c-blosc2's bytes."""
    import blosc2fs
    frame = h.frame(FIXTURE)
    with blosc2fs.mount(frame, read_only=True) as m:
        check(isinstance(m, pathlib.Path), f"the with block gives a Path: {m!r}")
        check(is_mounted(str(m)), f"{m} is mounted")
        check_equal(read_file(m / "data"), gunzip(h.expect_file(FIXTURE, ".data.gz")), "data")
        npy = read_file(m / "array.npy")
        array = gunzip(h.expect_file(FIXTURE, ".array.gz"))
        check(npy.startswith(b"\x93NUMPY") and npy.endswith(array), "array.npy holds c-blosc2's array")
        frame_json = json.loads(read_file(m / "frame.json"))
        check_equal(frame_json["nchunks"], h.expect(FIXTURE)["nchunks"], "nchunks")
        point = str(m)
    check(not is_mounted(point), "unmounted after the with block")
    check(not os.path.exists(point), "the temporary mount point is removed")
    check_equal(blosc2fs.info(frame), h.info(frame), "info() is blosc2fs --info")


def python_blosc2_array(h):
    """A python-blosc2 array mounted on a mount point of our own: np.load of
    array.npy (also memory-mapped) equals blosc2's [:]."""
    import blosc2
    import numpy as np

    import blosc2fs
    path = os.path.join(h.new_dir("frames"), "a.b2nd")
    want = np.arange(60 * 70 * 3, dtype="<f4").reshape(60, 70, 3) / 7
    blosc2.asarray(want, chunks=(20, 35, 3), blocks=(10, 10, 3), urlpath=path, mode="w")
    mnt = h.new_dir()
    m = blosc2fs.mount(path, mnt)
    try:
        check(m.mounted and is_mounted(mnt), "mounted")
        check_equal(os.fspath(m), mnt, "os.fspath(Mount)")
        a = np.load(m / "array.npy")
        check(np.array_equal(a, blosc2.open(path)[:]), "np.load(array.npy) == blosc2.open()[:]")
        mapped = np.load(m / "array.npy", mmap_mode="r")
        check(np.array_equal(mapped, want), "np.load(mmap_mode='r') == the array")
        del mapped
    finally:
        m.unmount()
    check(not m.mounted and not is_mounted(mnt), "unmount() unmounted")
    check(os.path.isdir(mnt), "a mount point of the caller's stays")
    m.unmount()  # a second call does nothing


def edit_committed_at_exit(h):
    """A vlmetalayer (msgpack bytes, as python-blosc2 stores its values), an
    attribute (JSON) and a chunk written in the with block: python-blosc2 reads
    them once the block is left (the daemon has committed and exited)."""
    import blosc2
    import msgpack
    import numpy as np

    import blosc2fs
    path = os.path.join(h.new_dir("frames"), "edit.b2nd")
    blosc2.asarray(np.arange(1000, dtype="<i8"), chunks=(250,), urlpath=path, mode="w")
    with blosc2fs.mount(path) as m:
        (m / "vlmeta" / "note").write_bytes(msgpack.packb("checked"))
        (m / "attrs" / "answer").write_text(json.dumps({"value": 42, "list": [1, 2]}))
        with open(m / "chunks" / "00000001", "r+b") as f:
            f.write(np.full(250, -1, dtype="<i8").tobytes())
    a = blosc2.open(path)
    check_equal(a.schunk.vlmeta["note"], "checked", "vlmeta['note'] through python-blosc2")
    check_equal(a.schunk.vlmeta["answer"], {"value": 42, "list": [1, 2]}, "vlmeta['answer'] through python-blosc2")
    want = np.arange(1000, dtype="<i8")
    want[250:500] = -1
    check(np.array_equal(a[:], want), "the chunk written reads back through python-blosc2")


def remote_frame(h):
    """A frame served by the tests' nginx, mounted by URL (read-only), with
    options passed as a dict."""
    import blosc2
    import numpy as np

    import blosc2fs
    from remote_servers import Nginx
    root = h.new_dir("served")
    path = os.path.join(root, "r.b2nd")
    want = np.linspace(0, 1, 300 * 40).reshape(300, 40)
    blosc2.asarray(want, chunks=(100, 40), urlpath=path, mode="w")
    with Nginx(root, h.workdir) as nginx:
        url = f"{nginx.url}/r.b2nd"
        cache_dir = h.new_dir("cache")
        with blosc2fs.mount(url, read_only=True, options={"cache_dir": cache_dir, "retries": 3}) as m:
            check(np.array_equal(np.load(m / "array.npy"), want), "array.npy over HTTP")
            check_equal(json.loads(read_file(m / "frame.json"))["source"]["url"], url, "the source URL")
        check_equal(blosc2fs.info(url)["nchunks"], 3, "info() of a URL")
        check(nginx.requests(), "nginx served the requests")


def expect_error(h, cls, status, call, *, contains=""):
    import blosc2fs
    try:
        result = call()
    except blosc2fs.MountError as e:
        check(type(e) is cls, f"{cls.__name__} expected, got {type(e).__name__}: {e}")
        check(isinstance(e, blosc2fs.MountError), "a MountError")
        check_equal(e.status, status, f"{cls.__name__}.status")
        check(str(e).startswith("blosc2fs: ") and "\n" not in str(e), f"the daemon's one line: {str(e)!r}")
        check(contains in str(e), f"{contains!r} in {str(e)!r}")
        return e
    if hasattr(result, "unmount"):
        result.unmount()
    raise TestFailure(f"{cls.__name__} expected, but it succeeded")


def error_classes(h):
    """Each exit status from a real failure, as its own class with the daemon's line."""
    import blosc2fs
    fixture = h.frame(FIXTURE)
    mnt = h.new_dir()
    expect_error(h, blosc2fs.UsageError, 1,
                 lambda: blosc2fs.mount(fixture, mnt, options={"cache_size": "lots"}), contains="cache_size")
    expect_error(h, blosc2fs.UsageError, 1, lambda: blosc2fs.mount(fixture, mnt, options={"no_such_option": True}))
    # A comma in a value stays in the value (escaped), and the daemon judges it.
    expect_error(h, blosc2fs.UsageError, 1,
                 lambda: blosc2fs.mount(fixture, mnt, options={"log_level": "info,rw"}), contains="info,rw")
    expect_error(h, blosc2fs.FrameNotFound, 2, lambda: blosc2fs.mount(os.path.join(mnt, "missing.b2nd")))
    expect_error(h, blosc2fs.FrameNotFound, 2, lambda: blosc2fs.info(os.path.join(mnt, "missing.b2nd")))
    not_a_frame = os.path.join(h.new_dir("files"), "text.b2frame")
    with open(not_a_frame, "w") as f:
        f.write("not a frame at all\n" * 10)
    expect_error(h, blosc2fs.NotAFrame, 3, lambda: blosc2fs.mount(not_a_frame))
    expect_error(h, blosc2fs.NotAFrame, 3, lambda: blosc2fs.info(not_a_frame))
    expect_error(h, blosc2fs.MountPointUnusable, 4, lambda: blosc2fs.mount(fixture, not_a_frame, read_only=True))
    # No daemon left, no temporary mount point left behind by the failures.
    left = [p for p in glob.glob(os.path.join(tempfile.gettempdir(), "blosc2fs-*")) if is_mounted(p)]
    check_equal(left, [], "mounts left by failed mounts")

    # 5: fusermount3 refuses a user a mount point they may not write (root's 0755 directory).
    frame = shutil.copy(fixture, os.path.join(os.path.dirname(os.environ[FRESH_MARK]), "user.b2nd"))
    os.chmod(frame, 0o644)
    roots = os.path.join(os.path.dirname(os.environ[FRESH_MARK]), "roots-mnt")
    os.makedirs(roots, mode=0o755, exist_ok=True)
    probe = ("import blosc2fs, json, sys\n"
             "try:\n"
             "    blosc2fs.mount(sys.argv[1], sys.argv[2]).unmount(); print(json.dumps(['mounted']))\n"
             "except blosc2fs.MountError as e:\n"
             "    print(json.dumps([type(e).__name__, e.status, str(e)]))\n")
    r = subprocess.run(["runuser", "-u", "nobody", "--", sys.executable, "-c", probe, frame, roots],
                       capture_output=True, text=True, timeout=120, cwd="/")
    check_equal(r.returncode, 0, f"the probe as nobody: {r.stderr.strip()}")
    name, status, line = json.loads(r.stdout)
    check_equal((name, status), ("FuseMountFailed", 5), f"a user's mount on root's directory ({line})")
    check("FUSE mount failed" in line, f"the daemon's line: {line!r}")

    # 6: a daemon that cannot start a thread (each thread's stack, the stack
    # limit, does not fit in the address-space limit).
    probe = ("import blosc2fs, json, resource, sys\n"
             "resource.setrlimit(resource.RLIMIT_STACK, (512 << 20, 512 << 20))\n"
             "resource.setrlimit(resource.RLIMIT_AS, (256 << 20, 256 << 20))\n"
             "try:\n"
             "    blosc2fs.mount(sys.argv[1], sys.argv[2], read_only=True).unmount(); print(json.dumps(['mounted']))\n"
             "except blosc2fs.MountError as e:\n"
             "    print(json.dumps([type(e).__name__, e.status, str(e)]))\n")
    mnt6 = h.new_dir()
    r = subprocess.run([sys.executable, "-c", probe, fixture, mnt6], capture_output=True, text=True, timeout=120)
    check_equal(r.returncode, 0, f"the probe under limits: {r.stderr.strip()}")
    name, status, line = json.loads(r.stdout)
    check_equal((name, status), ("InternalError", 6), f"a daemon that cannot start threads ({line})")
    check(not is_mounted(mnt6), "nothing mounted")

    # 7: nothing listens on the port.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    e = expect_error(h, blosc2fs.ServerUnreachable, 7,
                     lambda: blosc2fs.mount(f"http://127.0.0.1:{port}/x.b2nd", options={"retries": 1}))
    check(f"127.0.0.1:{port}" in str(e), f"the URL in {str(e)!r}")
    expect_error(h, blosc2fs.ServerUnreachable, 7,
                 lambda: blosc2fs.info(f"http://127.0.0.1:{port}/x.b2nd", options={"retries": 1}))


def busy_mount(h):
    """unmount() of a mount with an open file raises UnmountFailed and keeps the
    mount; leaving a with block then detaches it lazily, with a warning, and
    the daemon ends when the file closes."""
    import blosc2fs
    frame = h.frame(FIXTURE)
    m = blosc2fs.mount(frame, read_only=True)
    f = open(m / "data", "rb")
    try:
        try:
            m.unmount()
            raise TestFailure("unmount() of a busy mount succeeded")
        except blosc2fs.UnmountFailed as e:
            check(e.status is None and "busy" in str(e).lower(), f"UnmountFailed says busy: {e}")
        check(m.mounted and is_mounted(str(m)), "still mounted after the refusal")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m.__exit__(None, None, None)
        check(any(issubclass(w.category, RuntimeWarning) for w in caught), "a RuntimeWarning")
        check(not is_mounted(str(m)), "detached")
        check(not os.path.exists(str(m)), "the temporary mount point is removed at the detach")
        check(len(f.read(4096)) == 4096, "the open file still reads")
    finally:
        f.close()
    process = m._process
    process.wait(timeout=60)
    check_equal(process.returncode, 0, "the daemon exits once the file is closed")


EXIT_SCRIPT = r"""
import json, sys
import blosc2fs
m = blosc2fs.mount(sys.argv[1])
(m / "attrs" / "left").write_text(json.dumps("at exit"))
print(json.dumps([str(m), m.pid]), flush=True)
"""


def mounts_end_with_python(h):
    """A Python that ends without unmounting: its mount goes at exit, after the
    daemon's commits (python-blosc2 reads the attribute), and no daemon stays."""
    import blosc2
    import numpy as np
    path = os.path.join(h.new_dir("frames"), "exit.b2nd")
    blosc2.asarray(np.arange(100, dtype="<i4"), urlpath=path, mode="w")
    r = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, path], capture_output=True, text=True, timeout=120)
    check_equal(r.returncode, 0, f"the script: {r.stderr.strip()}")
    point, pid = json.loads(r.stdout)
    check(not is_mounted(point) and not os.path.exists(point), f"{point} is gone with the process")
    check(not os.path.exists(f"/proc/{pid}"), f"the daemon {pid} has exited")
    a = blosc2.open(path)
    check_equal(a.schunk.vlmeta["left"], "at exit", "the attribute through python-blosc2")


def main():
    if FRESH_MARK not in os.environ:
        make_fresh_venv_and_rerun()
    h = Harness("the Python wheel in a fresh venv: blosc2fs.mount() with real mounts", watchdog_seconds=300)
    h.require_fuse()
    if os.geteuid() != 0:
        print("cannot run: needs root (runs a probe as nobody)", flush=True)
        h.failed += 1
        h.finish()
    h.test("installed from the wheel alone: py.typed, blosc2fs and python -m blosc2fs, licenses",
           installed_as_a_wheel, h)
    h.test("a fixture frame in a with block", fixture_frame, h)
    h.test("a python-blosc2 array: np.load(array.npy) == blosc2 [:]", python_blosc2_array, h)
    h.test("an edit committed at exit, read back by python-blosc2", edit_committed_at_exit, h)
    h.test("a remote frame from nginx", remote_frame, h)
    h.test("each exception class from a real failure", error_classes, h)
    h.test("a busy mount: UnmountFailed, then a lazy detach at the end of the with block", busy_mount, h)
    h.test("a mount left by a Python that ends goes with it, committed", mounts_end_with_python, h)
    h.finish()


if __name__ == "__main__":
    main()
