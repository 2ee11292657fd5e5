"""Blosc2 files known to the desktop (docs/desktop.md): the shared-mime-info XML
registered in a scratch XDG_DATA_HOME with update-mime-database names our type
for each kind through GLib's own detection (`gio info`); the thumbnailer's Exec
line, taken from the .thumbnailer file the package installs with its %i %o %s
substituted as the freedesktop thumbnailer spec says, draws PNGs equal pixel for
pixel to preview.png's rules at that size (Pillow); refusals exit non-zero with
one line and no file; hostile files return in bounded time and memory; and
tumbler's tumblerd, over a D-Bus session bus of the test's own, makes a
thumbnail of a held file through the .thumbnailer file."""

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse

import blosc2
import numpy as np
from PIL import Image

from harness import Harness, TestFailure, check, check_equal, read_file
from remote_servers import Nginx
from test_preview import decode, expected

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
DESKTOP = os.path.join(SOURCE_ROOT, "packaging", "desktop")
MIME_XML = os.path.join(DESKTOP, "blosc2fs.xml")
THUMBNAILER = os.path.join(DESKTOP, "blosc2.thumbnailer")
TUMBLERD = "/usr/lib/x86_64-linux-gnu/tumbler-1/tumblerd"
# A hang bound, not a speed assertion: the thumbnailer gives up after 4 s by
# itself (src/fs/thumbnail.h); this leaves room for a loaded machine.
HANG_BOUND_SECONDS = 30
MEMORY_BOUND_KB = 256 * 1024
rng = np.random.default_rng(20261127)


# --- the thumbnailer as a file manager runs it ---

def thumbnailer_entry():
    """The [Thumbnailer Entry] keys of the file the package installs."""
    entry = {}
    with open(THUMBNAILER) as f:
        for line in f:
            line = line.strip()
            if "=" in line and not line.startswith("#"):
                key, value = line.split("=", 1)
                entry[key] = value
    return entry


def exec_argv(entry, input_path, output, size):
    """The Exec line with its field codes replaced as the thumbnailer spec says:
    %i the input's path, %u its URI, %o the output, %s the size, %% a percent."""
    codes = {"i": input_path, "u": "file://" + urllib.parse.quote(os.path.abspath(input_path)), "o": output,
             "s": str(size), "%": "%"}
    argv = []
    for word in entry["Exec"].split():
        out, i = "", 0
        while i < len(word):
            if word[i] == "%" and i + 1 < len(word):
                out += codes[word[i + 1]]
                i += 2
            else:
                out += word[i]
                i += 1
        argv.append(out)
    return argv


class Thumbnailer:
    """Runs the .thumbnailer's Exec line with `blosc2fs` found on PATH (the binary under test)."""

    def __init__(self, h):
        self.h = h
        self.bin_dir = h.new_dir("bin")
        os.symlink(h.binary, os.path.join(self.bin_dir, "blosc2fs"))
        self.env = dict(os.environ, PATH=self.bin_dir + os.pathsep + "/usr/bin:/bin")
        self.entry = thumbnailer_entry()
        self.scratch = h.new_dir("runs")  # stderr and GNU time's figure of each run
        self.runs = 0
        check(shutil.which(self.entry["TryExec"], path=self.env["PATH"]) is not None,
              f"TryExec={self.entry['TryExec']} is not on PATH")

    def run(self, input_path, output, size, timeout=HANG_BOUND_SECONDS):
        """(exit status, stderr, seconds, peak RSS in KiB) of one run, bounded in time. The
        peak RSS is GNU time's (%M): the rusage of a child forked from this Python would count
        the interpreter's pages from before the exec."""
        argv = exec_argv(self.entry, input_path, output, size)
        self.runs += 1
        measured = os.path.join(self.scratch, f"{self.runs}.rss")
        err_path = os.path.join(self.scratch, f"{self.runs}.stderr")
        with open(err_path, "w") as err:
            started = time.monotonic()
            proc = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", measured] + argv, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=err, env=self.env)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise TestFailure(f"{' '.join(argv)}: still running after {timeout} s")
        seconds = time.monotonic() - started
        with open(err_path) as f:
            stderr = f.read()
        os.unlink(err_path)
        with open(measured) as f:
            lines = f.read().splitlines()
        os.unlink(measured)
        # GNU time adds "Command exited with non-zero status N" before the figure.
        return proc.returncode, stderr, seconds, int(lines[-1])


def check_thumbnail(t, path, a, size, what):
    out = os.path.join(t.h.new_dir("thumbs"), "thumb.png")
    status, stderr, seconds, rss = t.run(path, out, size)
    check(status == 0, f"{what}: the thumbnailer failed ({status}): {stderr.strip()}")
    check_equal(stderr, "", f"{what}: the thumbnailer's stderr")
    png = read_file(out)
    check(png[:8] == b"\x89PNG\r\n\x1a\n", f"{what}: the output is not a PNG")
    mode, pixels, description = decode(png)
    want_mode, want = expected(a, size)
    check_equal(mode, want_mode, f"{what} at {size}: PNG mode")
    check_equal(pixels.shape, want.shape, f"{what} at {size}: picture shape")
    if not np.array_equal(pixels, want):
        bad = np.argwhere(pixels != want)
        raise TestFailure(f"{what} at {size}: {len(bad)} pixels differ, first at {tuple(bad[0])}: "
                          f"{pixels[tuple(bad[0])]} where the rules give {want[tuple(bad[0])]}")
    check(max(pixels.shape[:2]) <= size, f"{what}: {pixels.shape} is larger than {size}")
    check("shape=" in description, f"{what}: no Description: {description!r}")
    print(f"  {what} at {size}: {pixels.shape[1]}x{pixels.shape[0]} {mode}, {seconds:.2f} s, "
          f"peak RSS {rss // 1024} MiB", flush=True)
    return pixels


def check_refused(t, path, what, status=None, size=128):
    """Non-zero, one line naming the input, no output file and no temporary left beside it."""
    folder = t.h.new_dir("refused")
    out = os.path.join(folder, "thumb.png")
    got, stderr, seconds, rss = t.run(path, out, size)
    check(got > 0, f"{what}: exit status {got}, not a failure")
    if status is not None:
        check_equal(got, status, f"{what}: exit status")
    lines = stderr.splitlines()
    check(len(lines) == 1 and lines[0].startswith("blosc2fs: cannot draw a thumbnail of "),
          f"{what}: stderr is not one line: {stderr!r}")
    check_equal(os.listdir(folder), [], f"{what}: files left in the output's folder")
    return got, lines[0], seconds, rss


def write_array(h, name, a, **kwargs):
    path = os.path.join(h.new_dir("arrays"), name + ".b2nd")
    blosc2.asarray(a, urlpath=path, mode="w", **kwargs)
    return path


# --- MIME types ---

def gio_type(env, path):
    r = subprocess.run(["gio", "info", "-a", "standard::content-type", path], capture_output=True, text=True,
                       timeout=60, env=env, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise TestFailure(f"gio info {path} failed: {r.stderr.strip()}")
    for line in r.stdout.splitlines():
        if "standard::content-type:" in line:
            return line.split(":", 3)[-1].strip()
    raise TestFailure(f"gio info {path} names no content type: {r.stdout!r}")


def mime_environment(h):
    """A scratch XDG_DATA_HOME with our XML registered by update-mime-database; the
    system's database (application/zip, application/octet-stream) from /usr/share."""
    data_home = h.new_dir("xdg-data")
    packages = os.path.join(data_home, "mime", "packages")
    os.makedirs(packages)
    shutil.copy(MIME_XML, packages)
    r = subprocess.run(["update-mime-database", os.path.join(data_home, "mime")], capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise TestFailure(f"update-mime-database failed: {r.stderr.strip()}")
    return data_home, dict(os.environ, XDG_DATA_HOME=data_home, XDG_DATA_DIRS="/usr/share")


def store_files(h):
    """A .b2z (TreeStore), a .b2e (EmbedStore) and a .b2e of a DictStore, as python-blosc2 writes them."""
    folder = h.new_dir("stores")
    b2z = os.path.join(folder, "tree.b2z")
    with blosc2.TreeStore(b2z, mode="w", threshold=0) as s:
        s["/a/complex"] = np.arange(12, dtype=np.complex128).reshape(3, 4)
        s["/b/image"] = rng.integers(0, 256, (90, 120, 3), dtype=np.uint8)
        s["/c/series"] = np.sin(np.arange(500) / 9.0)
    b2e = os.path.join(folder, "embed.b2e")
    estore = blosc2.EmbedStore(urlpath=b2e, mode="w")
    estore["/field"] = np.add.outer(np.arange(70.0), np.arange(50.0)).astype(np.float32)
    estore["/vector"] = np.arange(40, dtype=np.int16)
    del estore
    return b2z, b2e


def mime_types(h):
    _, env = mime_environment(h)
    folder = h.new_dir("kinds")
    b2z, b2e = store_files(h)
    frame = h.frame("frame_simple-zstd.b2frame")
    b2nd = h.frame("b2nd-3d-f8.b2nd")
    renamed = {}
    for name, source in (("x.bin", b2nd), ("frame-without-extension", frame), ("store.dat", b2e),
                         ("legacy-caterva", h.frame("caterva-2d-f4.caterva"))):
        renamed[name] = os.path.join(folder, name)
        shutil.copyfile(source, renamed[name])
    random_bytes = os.path.join(folder, "random.bin")
    with open(random_bytes, "wb") as f:
        f.write(rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())
    cases = [
        ("a contiguous frame", frame, "application/x-blosc2-frame"),
        ("a b2nd array", b2nd, "application/x-blosc2-b2nd"),
        ("a renamed b2nd (x.bin: magic)", renamed["x.bin"], "application/x-blosc2-b2nd"),
        ("a renamed frame (magic)", renamed["frame-without-extension"], "application/x-blosc2-frame"),
        ("a legacy caterva array (magic)", renamed["legacy-caterva"], "application/x-blosc2-b2nd"),
        ("a sparse frame's index file", os.path.join(h.frame("b2nd-4d-i2-sframe.b2nd"), "chunks.b2frame"),
         "application/x-blosc2-sparse-frame"),
        ("a .b2z store", b2z, "application/x-blosc2-zip-store"),
        ("a .b2e store", b2e, "application/x-blosc2-embed-store"),
        ("a renamed .b2e (magic)", renamed["store.dat"], "application/x-blosc2-embed-store"),
    ]
    for what, path, want in cases:
        check_equal(gio_type(env, path), want, f"gio info of {what}")
    got = gio_type(env, random_bytes)
    check(got == "application/octet-stream", f"gio info of random bytes: {got}, not application/octet-stream")
    # The .b2z is a zip by content: without its extension GLib sees a zip, not our type (docs/desktop.md).
    zip_renamed = os.path.join(folder, "tree-without-extension")
    shutil.copyfile(b2z, zip_renamed)
    check_equal(gio_type(env, zip_renamed), "application/zip", "gio info of a renamed .b2z")
    # The thumbnailer names exactly the types the XML defines.
    with open(MIME_XML) as f:
        defined = re.findall(r'<mime-type type="([^"]+)"', f.read())
    listed = [m for m in thumbnailer_entry()["MimeType"].split(";") if m]
    check_equal(sorted(listed), sorted(defined), "the thumbnailer's MimeType list")


# --- thumbnails ---

def thumbnails_follow_the_preview_rules(h):
    t = Thumbnailer(h)
    stack = (np.arange(5 * 300 * 200, dtype=np.float32).reshape(5, 300, 200) % 977) - 300.5
    stack[0, 10:20, 30:60] = np.nan
    cases = {
        "f4-stack-3d": (stack, dict(chunks=(2, 128, 128), blocks=(1, 32, 64)), (128, 256)),
        "u8-rgb": (rng.integers(0, 256, (600, 1300, 3), dtype=np.uint8),
                   dict(chunks=(200, 500, 3), blocks=(50, 100, 3)), (128, 256, 1024, 5000)),
        "u8-rgba-small": (rng.integers(0, 256, (50, 40, 4), dtype=np.uint8), dict(chunks=(32, 32, 4), blocks=(8, 8, 4)),
                          (128,)),  # never enlarged
        "i16-1d-plot": ((np.arange(3000) % 251 - 100).astype(np.int16), dict(chunks=(1000,), blocks=(128,)),
                        (128, 256)),
    }
    for name, (a, kwargs, sizes) in cases.items():
        path = write_array(h, name, a, **kwargs)
        a = blosc2.open(path, mode="r")[:]
        for size in sizes:
            check_thumbnail(t, path, a, size, name)
    # A J2K image, as the plugin tests write it (plugin_frames.py).
    outdir = h.new_dir("plugins")
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    r = subprocess.run([sys.executable, os.path.join(HERE, "plugin_frames.py"), "j2k", outdir],
                       capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, env=env)
    if r.returncode != 0:
        raise TestFailure(f"plugin_frames.py j2k failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    for name in ("j2k-u8-rgb", "j2k-u16"):
        a = np.load(os.path.join(outdir, name + ".expect.npz"))["array"]
        for size in (128, 256):
            check_thumbnail(t, os.path.join(outdir, name + ".b2nd"), a, size, name)


def thumbnails_of_every_input(h):
    """Stores (.b2z, .b2e, .b2d: their first array leaf in key order), a sparse frame (the
    folder and its index file), a URL (nginx) and a fixture of c-blosc2's."""
    t = Thumbnailer(h)
    b2z, b2e = store_files(h)
    # /a/complex has no picture: the first array leaf is /b/image.
    with blosc2.TreeStore(b2z, mode="r") as s:
        image = s["/b/image"][:]
    check_thumbnail(t, b2z, image, 128, ".b2z, first array leaf /b/image")
    estore = blosc2.EmbedStore(urlpath=b2e, mode="r")
    check_thumbnail(t, b2e, estore["/field"][:], 128, ".b2e, first array leaf /field")
    b2d = os.path.join(h.new_dir("b2d"), "s.b2d")
    big = (np.arange(200 * 300, dtype=np.float32).reshape(200, 300) % 97) * 0.5
    with blosc2.DictStore(b2d, mode="w", threshold=100) as s:
        s["/a"] = np.arange(10, dtype=np.complex64)
        s["/big"] = big  # over the threshold: a frame file of its own in the folder
    check_thumbnail(t, b2d, big, 128, ".b2d, first array leaf /big")
    sparse = h.frame("b2nd-4d-i2-sframe.b2nd")
    a = blosc2.open(sparse, mode="r")[:]
    check_thumbnail(t, sparse, a, 128, "a sparse frame's folder")
    check_thumbnail(t, os.path.join(sparse, "chunks.b2frame"), a, 128, "a sparse frame's chunks.b2frame")
    fixture = h.frame("b2nd-3d-f8.b2nd")
    check_thumbnail(t, fixture, blosc2.open(fixture, mode="r")[:], 128, "c-blosc2's b2nd-3d-f8")
    root = h.new_dir("www")
    served = rng.integers(0, 60000, (400, 300)).astype(np.uint16)
    blosc2.asarray(served, urlpath=os.path.join(root, "served.b2nd"), mode="w", chunks=(100, 300), blocks=(25, 100))
    with Nginx(root, os.path.join(h.workdir, "nginx")) as server:
        check_thumbnail(t, server.url + "/served.b2nd", served, 128, "a URL (nginx)")
        check_refused(t, server.url + "/missing.b2nd", "a URL naming nothing", status=2)


def refusals(h):
    t = Thumbnailer(h)
    folder = h.new_dir("bad")
    corrupt = os.path.join(folder, "corrupt.b2nd")
    good = read_file(h.frame("b2nd-3d-f8.b2nd"))
    with open(corrupt, "wb") as f:  # a frame header followed by garbage
        f.write(good[:40] + rng.integers(0, 256, len(good) - 40, dtype=np.uint8).tobytes())
    check_refused(t, corrupt, "a corrupt frame", status=3)
    garbage = os.path.join(folder, "garbage.b2nd")
    with open(garbage, "wb") as f:
        f.write(rng.integers(0, 256, 5000, dtype=np.uint8).tobytes())
    check_refused(t, garbage, "random bytes", status=3)
    empty = write_array(h, "zero-elements", np.zeros((0, 5)))
    _, line, _, _ = check_refused(t, empty, "a 0-element array", status=3)
    check("without elements" in line, f"0-element array: {line}")
    check_refused(t, write_array(h, "complex", np.arange(20, dtype=np.complex64).reshape(4, 5)),
                  "a complex array", status=3)
    check_refused(t, h.frame("frame_simple-zstd.b2frame"), "a frame without an array", status=3)
    check_refused(t, os.path.join(folder, "missing.b2nd"), "a missing file", status=2)
    # The output's folder cannot be written: status 4, nothing left.
    out = os.path.join(folder, "no-such-folder", "thumb.png")
    status, stderr, _, _ = t.run(h.frame("b2nd-3d-f8.b2nd"), out, 128)
    check_equal(status, 4, f"an output in a missing folder: status ({stderr.strip()})")
    for bad_size in ("0", "-5", "big", "12x"):
        r = subprocess.run([h.binary, "--thumbnail", h.frame("b2nd-3d-f8.b2nd"), os.path.join(folder, "t.png"),
                            bad_size], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        check_equal(r.returncode, 1, f"SIZE {bad_size!r}: status")
        check_equal(len(r.stderr.splitlines()), 1, f"SIZE {bad_size!r}: lines on stderr")
    check_equal(sorted(os.listdir(folder)), ["corrupt.b2nd", "garbage.b2nd"], "files in the folder")


def patch_shape(path, old, new):
    """Rewrites the b2nd metalayer's shape entries (int64, big-endian after 0xD3) in place."""
    data = bytearray(read_file(path))
    for value_old, value_new in zip(old, new):
        marker = b"\xd3" + int(value_old).to_bytes(8, "big")
        at = data.find(marker, 87)
        check(at > 0, f"{path}: shape entry {value_old} not found")
        data[at + 1:at + 9] = int(value_new).to_bytes(8, "big")
    with open(path, "wb") as f:
        f.write(data)


def hostile_files_are_bounded(h):
    """A 240-byte frame claiming 10^7 x 10^7 uint8 in 16 MiB blocks (python-blosc2's own
    zeros: every sampled pixel a block of its own), the same claiming 10^9 x 10^9, and
    truncated files: each returns within the hang bound and 256 MB, with one line."""
    t = Thumbnailer(h)
    folder = h.new_dir("hostile")
    huge = os.path.join(folder, "huge.b2nd")
    blosc2.zeros((10**7, 10**7), dtype=np.uint8, urlpath=huge, mode="w", chunks=(4096, 4096), blocks=(4096, 4096))
    print(f"  huge.b2nd: {os.path.getsize(huge)} bytes claiming 10^7 x 10^7", flush=True)
    claimed = os.path.join(folder, "claimed-10e9.b2nd")
    shutil.copyfile(huge, claimed)
    patch_shape(claimed, (10**7, 10**7), (10**9, 10**9))
    real = write_array(h, "real", rng.random((700, 500)), chunks=(200, 200), blocks=(50, 50))
    data = read_file(real)
    truncated = {}
    for cut in (100, len(data) // 2, len(data) - 30):
        truncated[cut] = os.path.join(folder, f"truncated-{cut}.b2nd")
        with open(truncated[cut], "wb") as f:
            f.write(data[:cut])
    cases = [("10^7 x 10^7 in 16 MiB blocks", huge), ("a claimed 10^9 x 10^9", claimed)]
    cases += [(f"truncated at {cut} of {len(data)} bytes", path) for cut, path in truncated.items()]
    for what, path in cases:
        for size in (128, 1024):
            out_dir = h.new_dir("hostile-out")
            status, stderr, seconds, rss = t.run(path, os.path.join(out_dir, "t.png"), size)
            lines = stderr.splitlines()
            print(f"  {what} at {size}: status {status} in {seconds:.2f} s, peak RSS {rss // 1024} MiB: "
                  f"{lines[0] if lines else ''}", flush=True)
            check(rss < MEMORY_BOUND_KB, f"{what}: peak RSS {rss} KiB, over 256 MB")
            if status == 0:  # drawn in time: a PNG and nothing on stderr
                check(read_file(os.path.join(out_dir, "t.png"))[:4] == b"\x89PNG", f"{what}: not a PNG")
            else:
                check(len(lines) == 1 and lines[0].startswith("blosc2fs: cannot draw a thumbnail of "),
                      f"{what}: stderr is not one line: {stderr!r}")
                check_equal(os.listdir(out_dir), [], f"{what}: files left")
    # The 10^7 x 10^7 one cannot be drawn in time: given up by the deadline, with its line.
    out_dir = h.new_dir("hostile-out")
    status, stderr, seconds, _ = t.run(huge, os.path.join(out_dir, "t.png"), 256)
    check(status == 6 and "not drawn within 4 s" in stderr, f"10^7 x 10^7: status {status}: {stderr.strip()}")


# --- a real consumer: tumbler ---

def tumbler_makes_a_thumbnail(h):
    """tumblerd (Xfce's thumbnail service, which Thunar asks) on a session bus of our own,
    with our XML and .thumbnailer in its XDG_DATA_DIRS, thumbnails a held b2nd through
    org.freedesktop.thumbnails.Thumbnailer1.Queue into $XDG_CACHE_HOME/thumbnails/normal."""
    for tool in (TUMBLERD, shutil.which("dbus-daemon"), shutil.which("gdbus")):
        if not tool or not os.access(tool, os.X_OK):
            raise TestFailure(f"cannot run tumbler here: {tool or 'dbus-daemon/gdbus'} is missing "
                              "(scripts/install-deps.sh installs tumbler, dbus and libglib2.0-bin)")
    t = Thumbnailer(h)
    data_home, _ = mime_environment(h)
    data_dir = h.new_dir("xdg-data-dir")
    os.makedirs(os.path.join(data_dir, "thumbnailers"))
    shutil.copy(THUMBNAILER, os.path.join(data_dir, "thumbnailers"))
    cache = h.new_dir("xdg-cache")
    a = rng.integers(0, 256, (300, 400, 3), dtype=np.uint8)
    path = write_array(h, "tumbled", a, chunks=(100, 400, 3), blocks=(25, 100, 3))
    env = dict(t.env, XDG_DATA_HOME=data_home, XDG_DATA_DIRS=f"{data_dir}:/usr/share", XDG_CACHE_HOME=cache,
               HOME=h.new_dir("home"))
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    logs = h.new_dir("tumbler-logs")
    # A session bus of the test's own, without the system's service files: the
    # tumblerd started here is the one that answers (D-Bus activation would
    # start another, with the bus's environment, and the two would fight over the names).
    bus_conf = os.path.join(logs, "session.conf")
    with open(bus_conf, "w") as f:
        f.write(f"""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={logs}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
""")
    bus = subprocess.Popen(["dbus-daemon", f"--config-file={bus_conf}", "--nofork", "--print-address=1"],
                           stdout=subprocess.PIPE,
                           stderr=open(os.path.join(logs, "dbus.log"), "w"), stdin=subprocess.DEVNULL, text=True,
                           env=env)
    tumbler = None
    try:
        address = bus.stdout.readline().strip()
        check(address.startswith("unix:"), f"dbus-daemon printed no address: {address!r}")
        env["DBUS_SESSION_BUS_ADDRESS"] = address
        tumbler_log = os.path.join(logs, "tumblerd.log")
        tumbler = subprocess.Popen([TUMBLERD], stdout=open(tumbler_log, "w"), stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=env)
        uri = "file://" + urllib.parse.quote(os.path.abspath(path))
        call = ["gdbus", "call", "--session", "--dest", "org.freedesktop.thumbnails.Thumbnailer1",
                "--object-path", "/org/freedesktop/thumbnails/Thumbnailer1",
                "--method", "org.freedesktop.thumbnails.Thumbnailer1.Queue",
                f"['{uri}']", "['application/x-blosc2-b2nd']", "normal", "foreground", "0"]
        deadline = time.monotonic() + 60
        while True:  # tumblerd takes the bus name once its plugins are loaded
            r = subprocess.run(call, capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)
            if r.returncode == 0:
                break
            if tumbler.poll() is not None or time.monotonic() > deadline:
                raise TestFailure(f"tumblerd does not answer Queue: {r.stderr.strip()}; its log: "
                                  f"{open(tumbler_log).read()[-2000:]}")
            time.sleep(0.2)
        thumb = os.path.join(cache, "thumbnails", "normal", hashlib.md5(uri.encode()).hexdigest() + ".png")
        while not os.path.exists(thumb):
            if time.monotonic() > deadline:
                failed = os.path.join(cache, "thumbnails", "fail")
                raise TestFailure(f"tumblerd made no {thumb} in 60 s; failures: "
                                  f"{os.listdir(failed) if os.path.isdir(failed) else 'none'}; its log: "
                                  f"{open(tumbler_log).read()[-2000:]}")
            time.sleep(0.1)
        time.sleep(0.5)  # written in place by tumbler's cache: let it finish
        image = Image.open(thumb)
        image.load()
        _, want = expected(a, 128)
        got = np.asarray(image.convert("RGB"))
        check_equal(got.shape, want.shape, "tumbler's thumbnail: shape")
        check(np.array_equal(got, want), "tumbler's thumbnail: pixels differ from the preview rules at 128")
        check_equal(image.info.get("Thumb::URI"), uri, "tumbler's thumbnail: Thumb::URI")
        print(f"  tumblerd wrote {thumb}: {image.size[0]}x{image.size[1]} {image.mode}", flush=True)
    finally:
        for proc in (tumbler, bus):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def main():
    h = Harness("Blosc2 files on the desktop: MIME types and thumbnails", watchdog_seconds=600)
    h.test("MIME types: gio info names each kind, by extension and by magic", mime_types, h)
    h.test("thumbnails: the Exec line draws preview.png's rules at SIZE", thumbnails_follow_the_preview_rules, h)
    h.test("thumbnails of stores, sparse frames, URLs", thumbnails_of_every_input, h)
    h.test("refusals: one line, non-zero, no file", refusals, h)
    h.test("hostile and huge files: bounded time and memory", hostile_files_are_bounded, h)
    h.test("tumblerd makes a thumbnail over D-Bus", tumbler_makes_a_thumbnail, h)
    h.finish()


if __name__ == "__main__":
    main()
