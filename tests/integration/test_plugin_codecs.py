"""Every codec and filter python-blosc2 writes beyond the stream codecs, read through
the mount with no plugin loaded in the daemon: ZFP in its three modes, NDLZ, NDCELL,
NDMEAN and INT_TRUNC (inside c-blosc2), J2K and HTJ2K (PyPI plugins blosc2-j2k and
blosc2-htj2k: JP2 files, raw codestreams, the float frame, both HTJ2K backends), Grok
and OpenHTJ2K (frames in tests/data/plugin-codecs, written once: their plugins cannot
write under python-blosc2 4.x, but read) and OpenZL (blosc2-openzl, a plugin c-blosc2
loads at run time: the daemon loads the same library, found through the Python on its
PATH as c-blosc2 finds it, and reads every profile, 1-d to 4-d, contiguous, sparse and
in a store, locally, over nginx and inside a collection; edits read back in
python-blosc2. Without the plugin its data reads EIO with one line naming what to
install, writes are EOPNOTSUPP, and frame.json names the missing codec; a library
that is not a plugin is refused at mount; garbage OpenZL chunks read EIO).

plugin_frames.py writes the frames and python-blosc2's reading of them in one process
per plugin configuration. Each mount must give the same `chunks/N`, `data` and
`array.npy`, bit for bit (lossy OpenHTJ2K within 2: OpenJPEG rounds differently);
frame.json and index.tsv must name the codec and the filters. Chunks python-blosc2
cannot read (NDMEAN's own geometry bug; ZFP or NDCELL chunks in a frame without the
"b2nd" metalayer) read EIO with one log line. ZFP and NDLZ frames edited through the
mount must read back in python-blosc2 (c-blosc2's own decoder) as the same edit made
by python-blosc2 does; J2K chunk and data writes are refused with EOPNOTSUPP and
change nothing, while its vlmeta and attrs still take edits."""

import errno
import json
import os
import shutil
import subprocess
import sys
import time

import blosc2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import PATIENCE, Harness, TestFailure, check, check_equal, read_file  # noqa: E402
from remote_servers import Nginx  # noqa: E402
from python_blosc2_readback import raw_vlmeta  # noqa: E402
from writes import write_errno  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
COMMITTED = os.path.join(HERE, "..", "data", "plugin-codecs")
GROUPS = ["builtin", "schunk", "j2k", "j2k-raw", "j2k-float", "htj2k", "htj2k-grok", "htj2k-float", "openzl",
          "grok", "openhtj2k"]
# Frames of these groups are committed; the group only reads them again with the plugin.
COMMITTED_GROUPS = {"grok", "openhtj2k"}
WANT_CODECS = ("zfp_acc", "zfp_prec", "zfp_rate", "ndlz", "j2k", "htj2k", "grok", "openhtj2k", "openzl")
WANT_FILTERS = ("ndcell", "ndmean", "int_trunc")


def plugin_env():
    """c-blosc2 finds a plugin it has not loaded by running the first `python` on PATH,
    and the daemon asks the first `python3`: make that this venv's."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


def no_plugin_env(h):
    """The daemons' default environment (harness.py), whose python3 is Debian's, which
    has no blosc2_openzl (checked)."""
    r = subprocess.run(["python3", "-c", "import blosc2_openzl"], env=h.daemon_env, capture_output=True,
                       stdin=subprocess.DEVNULL, timeout=60)
    check(r.returncode != 0, "/usr/bin/python3 imports blosc2_openzl: no Python without the plugin to test with")
    return h.daemon_env


OPENZL_LIBRARY = "libblosc2_openzl.so"


def committed_fallback(group):
    """The committed frames of a group with their committed readings, for a Python
    without the (read-only) plugin."""
    entries = []
    for name in sorted(os.listdir(COMMITTED)):
        if name.startswith(group + "-") and name.endswith(".b2nd"):
            stem = name[:-len(".b2nd")]
            expect = os.path.abspath(os.path.join(COMMITTED, stem + ".expect.npz"))
            nchunks = len([k for k in np.load(expect).files if k.startswith("chunk")])
            entries.append({"name": stem, "path": os.path.abspath(os.path.join(COMMITTED, name)), "codec": group,
                            "tolerance": 2 if (group == "openhtj2k" and "lossy" in stem) else 0, "readable": True,
                            "b2nd": True, "filters": [], "nchunks": nchunks, "coded_chunks": nchunks,
                            "expect": expect})
    return entries


def generate(h):
    """Writes every frame; returns the entries plugin_frames.py prints (see there)."""
    outdir = h.new_dir("frames")
    entries = []
    for group in GROUPS:
        r = subprocess.run([sys.executable, os.path.join(HERE, "plugin_frames.py"), group, outdir],
                           capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, env=plugin_env())
        if r.returncode != 0 and group in COMMITTED_GROUPS and f"No module named 'blosc2_{group}'" in r.stderr:
            print(f"  note: blosc2-{group} is not installed: the committed {group} frames are compared with "
                  f"their committed readings", flush=True)
            entries.extend(committed_fallback(group))
            continue
        if r.returncode != 0:
            raise TestFailure(f"plugin_frames.py {group} failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
        for line in r.stdout.splitlines():
            entries.append(json.loads(line))
    print(f"  {len(entries)} frames: " + ", ".join(e["name"] for e in entries), flush=True)
    codecs = {e["codec"] for e in entries}
    filters = {f for e in entries for f in e["filters"]}
    check(all(c in codecs for c in WANT_CODECS), f"no frame of codec {[c for c in WANT_CODECS if c not in codecs]}")
    check(all(f in filters for f in WANT_FILTERS), f"no frame of filter {[f for f in WANT_FILTERS if f not in filters]}")
    return entries


def same(got, want, tolerance, what, dtype=np.uint8, blocksize=None):
    """got == want as bytes (tolerance 0), or as samples of dtype within tolerance.
    A failure names the first differing byte (and its block) and both values."""
    check_equal(len(got), len(want), f"{what}: size")
    if got == want:
        return
    a, b = np.frombuffer(got, np.uint8), np.frombuffer(want, np.uint8)
    first = int(np.flatnonzero(a != b)[0])
    where = f"byte {first}" + (f" (block {first // blocksize}, byte {first % blocksize} in it)" if blocksize else "")
    if tolerance == 0:
        raise TestFailure(f"{what}: differs from python-blosc2 first at {where}: got {a[first]:#04x}, want "
                          f"{b[first]:#04x}; {int((a != b).sum())} of {len(a)} bytes differ")
    dtype = np.dtype(dtype)
    x = np.frombuffer(got, dtype).astype(np.float64)
    y = np.frombuffer(want, dtype).astype(np.float64)
    diff = np.abs(x - y)
    worst = int(np.argmax(diff))
    check(diff[worst] <= tolerance,
          f"{what}: sample {worst} ({dtype}) is {x[worst]:g}, python-blosc2 reads {y[worst]:g} (off by "
          f"{diff[worst]:g} > {tolerance}); first differing {where}")


def entry_root(mnt, entry):
    """Where the frame's tree is in a mount of entry["path"]: a store shows its leaf
    as a directory."""
    return os.path.join(mnt, entry["leaf"]) if entry.get("store") else mnt


def index_rows(mnt):
    rows = read_file(os.path.join(mnt, "index.tsv")).decode().splitlines()
    header = rows[0].split("\t")
    return [dict(zip(header, row.split("\t"))) for row in rows[1:]]


def names_codec_and_filters(mnt, entry, info):
    name, codec = entry["name"], entry["codec"]
    check_equal(info["codec"], codec, f"{name}: frame.json codec")
    check("decodable" in info and "decodable" in info["codec_info"], f"{name}: frame.json has no decodable flag")
    for f in entry["filters"]:
        check(f in info["filters"], f"{name}: frame.json filters {info['filters']} lack {f}")
    rows = index_rows(mnt)
    check_equal(len(rows), entry["nchunks"], f"{name}: index.tsv rows")
    for row in rows:
        if row["special"] != "none":
            continue
        check_equal(row["codec"], codec, f"{name}: index.tsv codec of chunk {row['chunk']}")
        for f in entry["filters"]:
            check(f in row["filters"].split(","), f"{name}: index.tsv filters of chunk {row['chunk']}: "
                                                  f"{row['filters']} lack {f}")


def reads_as_python_blosc2(h, entry, env=None):
    name = entry["name"]
    check(entry["coded_chunks"] > 0 or name.endswith("-stored"),
          f"{name}: python-blosc2 stored every chunk verbatim, so no codec or filter is tested")
    expect = np.load(entry["expect"])
    if "committed" in entry:
        committed = np.load(entry["committed"])
        check_equal(sorted(committed.files), sorted(expect.files), f"{name}: arrays of the committed reading")
        for key in expect.files:
            check(committed[key].dtype == expect[key].dtype and np.array_equal(committed[key], expect[key]),
                  f"{name}: the committed {key} is no longer what python-blosc2 reads")
    mnt = h.mount(entry["path"], ["-o", "ro"], env=env)
    try:
        tree_reads_as_python_blosc2(entry_root(mnt, entry), entry)
    finally:
        h.unmount(mnt)


def tree_reads_as_python_blosc2(mnt, entry):
    """The frame tree at mnt (a mount, a store's leaf, a collection's dataset) gives
    python-blosc2's chunks, data and array.npy."""
    name, tolerance = entry["name"], entry["tolerance"]
    expect = np.load(entry["expect"])
    dtype = expect["array"].dtype if "array" in expect.files else np.uint8
    info = json.loads(read_file(os.path.join(mnt, "frame.json")))
    names_codec_and_filters(mnt, entry, info)
    if entry["codec"] == "openzl":
        check(OPENZL_LIBRARY in (info["codec_info"]["decoded_by"] or ""),
              f"{name}: frame.json decoded_by does not name the plugin: {info['codec_info']['decoded_by']}")
        check_equal(info["missing_codecs"], [], f"{name}: frame.json missing_codecs")
    check_equal(info["decodable"], True, f"{name}: frame.json decodable")
    check_equal(info["codec_info"]["decodable"], True, f"{name}: frame.json codec_info.decodable")
    if tolerance:
        check("+-2" in (info["codec_info"]["note"] or ""), f"{name}: frame.json notes the lossy HTJ2K rounding")
    names = sorted(os.listdir(os.path.join(mnt, "chunks")))
    check_equal(names, ["%08d" % i for i in range(entry["nchunks"])], f"{name}: chunks/")
    for i, chunk in enumerate(names):
        got = read_file(os.path.join(mnt, "chunks", chunk))
        same(got, expect[f"chunk{i}"].tobytes(), tolerance, f"{name}: chunks/{chunk}", dtype, info["blocksize"])
    want_data = b"".join(expect[f"chunk{i}"].tobytes() for i in range(entry["nchunks"]))
    same(read_file(os.path.join(mnt, "data")), want_data, tolerance, f"{name}: data", dtype)
    if entry["b2nd"]:
        array = np.load(os.path.join(mnt, "array.npy"))
        want = expect["array"]
        check_equal(array.dtype, want.dtype, f"{name}: array.npy dtype")
        check_equal(array.shape, want.shape, f"{name}: array.npy shape")
        same(array.tobytes(), want.tobytes(), tolerance, f"{name}: array.npy", dtype)


class LoggedMount:
    """A read-only mount in the foreground (-f), its log in a file, for reading errors."""

    def __init__(self, h, path, options=("-o", "ro"), env=None):
        self.h, self.mnt = h, h.new_dir()
        self.log_path = self.mnt + ".log"
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen([h.binary, "-f", *options, path, self.mnt], stdout=subprocess.DEVNULL,
                                         stderr=log, stdin=subprocess.DEVNULL, env=env or h.daemon_env)
        deadline = time.monotonic() + PATIENCE
        while not os.path.ismount(self.mnt) and time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.05)
        if not os.path.ismount(self.mnt):
            self.stop()
            raise TestFailure(f"the mount of {path} did not appear: {open(self.log_path).read().strip()}")
        h.mounts[self.mnt] = os.minor(os.stat(self.mnt).st_dev)

    def stop(self, level="error"):
        """Unmounts, waits for the daemon; returns the log's lines of that level."""
        self.h.unmount(self.mnt)
        try:
            self.proc.wait(timeout=PATIENCE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=PATIENCE)
        return self.lines(level)

    def lines(self, level):
        return [line for line in open(self.log_path).read().splitlines() if f" {level}: " in line]


def chunk_reads_eio(mounted, what):
    try:
        read_file(os.path.join(mounted.mnt, "chunks", "00000000"))
    except OSError as e:
        check_equal(errno.errorcode.get(e.errno, e.errno), "EIO", f"{what}: errno of reading chunks/00000000")
        return
    raise TestFailure(f"{what}: chunks/00000000 read, but python-blosc2 cannot decompress it")


def unreadable_reads_eio(h, entry, log_words):
    """A frame whose chunks python-blosc2 (c-blosc2) cannot decompress: the mount shows
    its metadata, and reading a chunk gives EIO and one log line naming the chunk
    and, in log_words, why."""
    name = entry["name"]
    mounted = LoggedMount(h, entry["path"])
    try:
        info = json.loads(read_file(os.path.join(mounted.mnt, "frame.json")))
        names_codec_and_filters(mounted.mnt, entry, info)
        chunk_reads_eio(mounted, name)
    finally:
        errors = mounted.stop()
    check(len(errors) == 1, f"{name}: one error line for one failed read, got {errors}")
    print(f"  {name}: {errors[0].split(' error: ', 1)[1]}", flush=True)
    check("chunk 0" in errors[0], f"{name}: the log line names the chunk: {errors[0]}")
    for word in log_words:
        check(word in errors[0], f"{name}: the log line does not say {word!r}: {errors[0]}")


OPENZL_HINT = "pip install blosc2-openzl, or -o plugin_path=openzl:LIB"


def openzl_without_the_plugin_reads_eio(h, entry):
    """A daemon whose python3 has no blosc2_openzl: metadata shows, frame.json names the
    missing codec and what to install, two chunk reads are EIO (one error line each)
    and one warning line per mount names what to install."""
    env = no_plugin_env(h)
    info = h.info(entry["path"], env=env)
    check_equal(info["codec"], "openzl", "openzl: --info codec")
    check_equal(info["decodable"], False, "openzl: --info decodable")
    want_missing = [{"id": 38, "name": "openzl", "install": OPENZL_HINT}]
    check_equal(info["missing_codecs"], want_missing, "openzl: --info missing_codecs")
    mounted = LoggedMount(h, entry["path"], env=env)
    try:
        shown = json.loads(read_file(os.path.join(mounted.mnt, "frame.json")))
        names_codec_and_filters(mounted.mnt, entry, shown)
        check_equal(shown["decodable"], False, "openzl: frame.json decodable")
        check_equal(shown["missing_codecs"], want_missing, "openzl: frame.json missing_codecs")
        chunk_reads_eio(mounted, "openzl")
        try:
            read_file(os.path.join(mounted.mnt, "chunks", "00000001"))
            raise TestFailure("openzl: chunks/00000001 read without the plugin")
        except OSError as e:
            check_equal(errno.errorcode.get(e.errno, e.errno), "EIO", "openzl: errno of reading chunks/00000001")
    finally:
        errors = mounted.stop()
    warnings = mounted.lines("warning")
    check(len(errors) == 2, f"openzl: one error line per failed read, got {errors}")
    check("openzl" in errors[0] and "blosc2-openzl" in errors[0] and "chunk 0" in errors[0],
          f"openzl: the log line names the codec, the plugin and the chunk: {errors[0]}")
    hints = [w for w in warnings if "codec openzl (38)" in w]
    check(len(hints) == 1 and OPENZL_HINT in hints[0],
          f"openzl: one warning per mount naming what to install ({OPENZL_HINT!r}), got {warnings}")


def openzl_loaded_is_logged(h, entry):
    """With allow_other the daemon says, as a warning, which library it loaded."""
    mounted = LoggedMount(h, entry["path"], ("-o", "ro,allow_other"), env=plugin_env())
    try:
        read_file(os.path.join(mounted.mnt, "chunks", "00000000"))
    finally:
        errors = mounted.stop()
    check(not errors, f"openzl: errors reading with the plugin: {errors}")
    loaded = [w for w in mounted.lines("warning") if "loaded the plugin of codec openzl (38) from" in w]
    check(len(loaded) == 1 and OPENZL_LIBRARY in loaded[0],
          f"openzl: with allow_other, one warning names the loaded library: {mounted.lines('warning')}")


def openzl_library_that_is_no_plugin_is_refused(h, entry):
    """-o plugin_path naming a library without `info` (libz), or no file: the mount
    fails with exit status 1 and one line; nothing is mounted."""
    r = subprocess.run(["ldd", h.binary], capture_output=True, text=True, timeout=60)
    libz = next(line.split("=>")[1].split()[0] for line in r.stdout.splitlines() if "libz.so" in line)
    for library, words in ((libz, "no `info` symbol"), ("/nonexistent/libblosc2_openzl.so", "No such file")):
        mnt = h.new_dir()
        r = h.run(["-o", f"ro,plugin_path=openzl:{library}", entry["path"], mnt], env=plugin_env())
        check_equal(r.returncode, 1, f"mount with plugin_path={library}: exit status")
        lines = r.stderr.strip().splitlines()
        check(len(lines) == 1 and words in lines[0] and library in lines[0],
              f"plugin_path={library}: one line saying {words!r}, got {lines}")
        check(not os.path.ismount(mnt), f"plugin_path={library}: mounted anyway")


def garbage_openzl_chunks_read_eio(h, entries, name):
    """A chunk claiming codec 38 whose streams are garbage (OpenZL's magic, then noise),
    written into a copy's file: with the plugin loaded, reading it is EIO with one
    line, and the mount keeps serving the other chunks."""
    path = copy_frame(h, entries, name)
    reference = blosc2.open(path, mode="r")
    rng = np.random.default_rng(38)
    # Chunk 1's streams keep their sizes and OpenZL's magic; the rest becomes noise, in
    # place in the file (raw/N.chunk and python-blosc2 both refuse to store it).
    stored = bytes(reference.schunk.get_chunk(1))
    del reference
    garbled = bytearray(stored)
    h1 = chunk_header(stored)
    for b in range(-(-h1["nbytes"] // h1["blocksize"])):
        start = int.from_bytes(stored[32 + 4 * b:36 + 4 * b], "little")
        csize = int.from_bytes(stored[start:start + 4], "little")
        garbled[start + 8:start + 4 + csize] = rng.integers(0, 256, csize - 4, dtype=np.uint8).tobytes()
    frame_bytes = open(path, "rb").read()
    check_equal(frame_bytes.count(stored), 1, f"{name}: chunk 1's bytes in the frame file")
    with open(path, "r+b") as f:
        f.seek(frame_bytes.index(stored))
        f.write(bytes(garbled))
    mounted = LoggedMount(h, path, env=plugin_env())
    try:
        try:
            read_file(os.path.join(mounted.mnt, "chunks", "00000001"))
            raise TestFailure(f"{name}: a garbage OpenZL chunk read")
        except OSError as e:
            check_equal(errno.errorcode.get(e.errno, e.errno), "EIO", f"{name}: errno of reading the garbage chunk")
        expect = np.load(entries_by_name(entries)[name]["expect"])
        check(read_file(os.path.join(mounted.mnt, "chunks", "00000000")) == expect["chunk0"].tobytes(),
              f"{name}: chunk 0 after the garbage chunk's EIO")
    finally:
        errors = mounted.stop()
    check(len(errors) == 1 and "chunk 1" in errors[0] and "openzl" in errors[0],
          f"{name}: one error line naming chunk 1 and the codec, got {errors}")
    print(f"  {name}: {errors[0].split(' error: ', 1)[1]}", flush=True)


def entries_by_name(entries):
    return {e["name"]: e for e in entries}


def openzl_over_nginx(h, entries):
    """The same OpenZL files served by nginx, mounted by URL: the same bytes."""
    served = h.new_dir("served-openzl")
    for entry in entries:
        target = os.path.join(served, os.path.basename(entry["path"]))
        if os.path.isdir(entry["path"]):
            shutil.copytree(entry["path"], target)
        else:
            shutil.copyfile(entry["path"], target)
    with Nginx(served, h.new_dir("nginx-openzl")) as nginx:
        for entry in entries:
            url = f"{nginx.url}/{os.path.basename(entry['path'])}"
            mnt = h.mount(url, env=plugin_env())
            try:
                tree_reads_as_python_blosc2(entry_root(mnt, entry), entry)
            finally:
                h.unmount(mnt)


def openzl_inside_a_collection(h, entries):
    """A folder of the OpenZL files mounted as one collection: each dataset's tree
    reads as python-blosc2 reads the file."""
    folder = h.new_dir("openzl-collection")
    for entry in entries:
        target = os.path.join(folder, os.path.basename(entry["path"]))
        if os.path.isdir(entry["path"]):
            shutil.copytree(entry["path"], target)
        else:
            shutil.copyfile(entry["path"], target)
    mnt = h.mount(folder, ["-o", "ro"], env=plugin_env())
    try:
        for entry in entries:
            tree_reads_as_python_blosc2(entry_root(os.path.join(mnt, os.path.basename(entry["path"])), entry), entry)
    finally:
        h.unmount(mnt)


def raw_codestreams_are_raw(h, entries):
    """The j2k-raw group must really hold raw codestreams (FF4F), the others JP2 files."""
    for entry in entries:
        name = entry["name"]
        if entry["codec"] != "j2k" or "float" in name:
            continue
        mnt = h.mount(entry["path"], ["-o", "ro"])
        try:
            chunk = read_file(os.path.join(mnt, "raw", "00000000.chunk"))
        finally:
            h.unmount(mnt)
        first_block = int.from_bytes(chunk[32:36], "little") + 4
        payload = chunk[first_block:first_block + 12]
        want = b"\xff\x4f" if name.endswith("-raw") else b"\x00\x00\x00\x0cjP  "
        check(payload.startswith(want), f"{name}: block 0 starts {payload.hex()}, want {want.hex()}")


def copy_frame(h, entries, name, stem="edit"):
    [path] = [e["path"] for e in entries if e["name"] == name]
    dst = os.path.join(h.new_dir(stem), name + ".b2nd")
    shutil.copyfile(path, dst)
    return dst


def chunk_header(raw):
    return {"flags": raw[2], "compformat": raw[2] >> 5, "udcompcode": raw[22], "meta": raw[23],
            "nbytes": int.from_bytes(raw[4:8], "little"), "blocksize": int.from_bytes(raw[8:12], "little"),
            "cbytes": int.from_bytes(raw[12:16], "little")}


def stored_raw(raw):
    return bool(raw[2] & 0x02)  # memcpyed: no block went through the codec


def coded_blocks(raw):
    """Each block's bytes in a compressed chunk (the streams from its start offset to
    the next block's), by block index: blocks may be stored in any order."""
    header = chunk_header(raw)
    nblocks = -(-header["nbytes"] // header["blocksize"])
    starts = [int.from_bytes(raw[32 + 4 * i:36 + 4 * i], "little") for i in range(nblocks)]
    ends = {start: end for start, end in zip(sorted(starts), sorted(starts)[1:] + [header["cbytes"]])}
    return [raw[start:ends[start]] for start in starts]


def edits_read_back_as_python_blosc2s(h, entries, name, codec_id, make_values, tolerance=None, env=None):
    """Overwrites chunk 1 and the last chunk (where it is another) through the mount (an append is refused:
    an N-d array keeps the chunks its shape needs, docs/operations.md). python-blosc2
    must read both as it reads the same edit made by python-blosc2 itself on another
    copy (for ZFP: what zfp keeps of the values, for
    NDLZ: the values), and both must be stored in the frame's codec and codec meta.
    ZFP runs the same library as c-blosc2's plugin: its blocks must be c-blosc2's,
    byte for byte, and stored raw exactly when c-blosc2 stores them raw. NDLZ is our
    own encoder: its blocks may differ and it may give up (store raw) where c-blosc2
    does not, which is only noted. tolerance: also the largest error against the
    written values the frame's mode promises (ZFP_ACC without filters: its accuracy)."""
    zfp = codec_id in (33, 34, 35)
    path = copy_frame(h, entries, name)
    reference = blosc2.open(copy_frame(h, entries, name, "reference"), mode="a")
    nchunks, dtype = reference.schunk.nchunks, reference.dtype
    last = nchunks - 1  # edited too where it is not chunk 1 (chunk 0 stays as it was)
    edited = (1, last) if last > 1 else (1,)
    chunk_bytes = len(reference.schunk.decompress_chunk(0))
    chunk0 = reference.schunk.decompress_chunk(0)
    new1 = make_values(chunk_bytes // dtype.itemsize, 1).astype(dtype)
    new_last = make_values(chunk_bytes // dtype.itemsize, 2).astype(dtype)
    reference.schunk.update_data(1, new1, copy=True)
    if last > 1:
        reference.schunk.update_data(last, new_last, copy=True)
    for n in edited:
        check(not stored_raw(reference.schunk.get_chunk(n)),
              f"{name}: python-blosc2 stores the edited chunk {n} raw: these values do not test an encoder")
    mnt = h.mount(path, env=env)
    try:
        check_equal(write_errno(os.path.join(mnt, "chunks", "00000001"), [new1.tobytes()]), ("ok", 0),
                    f"{name}: overwriting chunk 1")
        if last > 1:
            check_equal(write_errno(os.path.join(mnt, "chunks", "%08d" % last), [new_last.tobytes()]), ("ok", 0),
                        f"{name}: overwriting chunk {last}")
        check_equal(write_errno(os.path.join(mnt, "chunks", "%08d" % nchunks), [new_last.tobytes()])[1], errno.EPERM,
                    f"{name}: appending chunk {nchunks} to an N-d array")
    finally:
        h.unmount(mnt)
    after = blosc2.open(path, mode="r")
    check_equal(after.schunk.nchunks, nchunks, f"{name}: chunks after the edits, in python-blosc2")
    check(after.schunk.decompress_chunk(0) == chunk0, f"{name}: chunk 0, not written, changed")
    coded = 0
    for n, written in ((1, new1), (last, new_last))[:len(edited)]:
        ours, theirs = after.schunk.get_chunk(n), reference.schunk.get_chunk(n)
        header = chunk_header(ours)
        check_equal((header["compformat"], header["udcompcode"], header["meta"]),
                    (6, codec_id, chunk_header(theirs)["meta"]), f"{name}: chunk {n}'s codec and codec meta")
        got = after.schunk.decompress_chunk(n)
        same(got, reference.schunk.decompress_chunk(n), 0,
             f"{name}: chunk {n} written through the mount, read by python-blosc2, against the same edit by "
             f"python-blosc2", blocksize=header["blocksize"])
        if tolerance is not None:
            error = np.max(np.abs(np.frombuffer(got, dtype).astype(np.float64) - written.astype(np.float64)))
            check(error <= tolerance, f"{name}: chunk {n} reads back off by {error:g} (> {tolerance:g})")
        if stored_raw(ours):
            check(not zfp, f"{name}: chunk {n} stored raw ({header['cbytes']} bytes for {header['nbytes']}); "
                           f"c-blosc2 codes it in {chunk_header(theirs)['cbytes']}")
            print(f"  {name}: note: chunk {n} stored raw ({header['cbytes']} bytes); c-blosc2's encoder codes it "
                  f"in {chunk_header(theirs)['cbytes']}", flush=True)
            continue
        coded += 1
        mine, its = coded_blocks(ours), coded_blocks(theirs)
        differing = [i for i, (a, b) in enumerate(zip(mine, its)) if a != b]
        if zfp:
            check(not differing, f"{name}: chunk {n}: blocks {differing} of {len(mine)} differ from c-blosc2's "
                                 f"zfp blocks (block {differing[0] if differing else 0}: "
                                 f"{len(mine[differing[0]]) if differing else 0} bytes, c-blosc2's "
                                 f"{len(its[differing[0]]) if differing else 0})")
        else:
            print(f"  {name}: chunk {n}: {header['cbytes']} bytes (c-blosc2's encoder: "
                  f"{chunk_header(theirs)['cbytes']}), {len(mine) - len(differing)} of {len(mine)} blocks "
                  f"byte for byte c-blosc2's", flush=True)
    check(coded > 0, f"{name}: no edited chunk went through the encoder (both stored raw)")
    # Our reading of our chunks is python-blosc2's.
    mnt = h.mount(path, ["-o", "ro"], env=env)
    try:
        for n in edited:
            got = read_file(os.path.join(mnt, "chunks", "%08d" % n))
            same(got, after.schunk.decompress_chunk(n), 0, f"{name}: the mount's chunks/{n:08d}")
    finally:
        h.unmount(mnt)


def smooth(n, seed):
    return np.sin(np.arange(n) / (20.0 + seed)) * 50 + seed


def ramp(n, seed):
    return np.arange(n) * 0.25 + seed


def steps(n, seed):
    """Flat areas, as images have: NDLZ codes them as constant cells."""
    return (np.arange(n) // 512 * (3 + seed)) % 200


def data_writes_are_refused(h, entries, name, env=None):
    """A chunk overwrite and a data overwrite of a frame whose codec cannot be encoded
    here (J2K; OpenZL without its plugin) fail with EOPNOTSUPP, a chunk append with EPERM
    (an N-d array keeps the chunks its shape needs), and leave the file byte-identical;
    vlmeta and attrs edits then work and read back in python-blosc2."""
    label = name.split("-")[0]
    path = copy_frame(h, entries, name)
    original = open(path, "rb").read()
    opened = blosc2.open(path, mode="r")  # kept open: its schunk lives as long as it does
    before = opened.schunk.get_chunk(0)  # as stored: this process may have no decoder of it
    nchunks, chunksize = opened.schunk.nchunks, opened.schunk.chunksize
    del opened
    payload = (bytes(range(256)) * (chunksize // 256 + 1))[:chunksize]  # a whole chunk: no size rule is hit
    mnt = h.mount(path, env=env)
    try:
        writes = {"chunks/00000000": (os.path.join(mnt, "chunks", "00000000"), os.O_WRONLY | os.O_TRUNC, errno.EOPNOTSUPP),
                  "data": (os.path.join(mnt, "data"), os.O_WRONLY, errno.EOPNOTSUPP),
                  f"chunks/{nchunks:08d} (an append)": (os.path.join(mnt, "chunks", f"{nchunks:08d}"),
                                                         os.O_WRONLY | os.O_CREAT, errno.EPERM)}
        for what, (target, flags, want) in writes.items():
            stage, err = write_errno(target, [payload], flags)
            check(err == want, f"{label}: writing {what} gave {errno.errorcode.get(err, err)} at {stage}, "
                               f"want {errno.errorcode[want]}")
    finally:
        h.unmount(mnt)
    check(open(path, "rb").read() == original, f"{label}: the refused writes changed the frame")
    mnt = h.mount(path, env=env)
    try:
        check_equal(write_errno(os.path.join(mnt, "attrs", "note"), [b'{"edited": [1, 2]}\n']), ("ok", 0),
                    f"{label}: writing attrs/note")
        check_equal(write_errno(os.path.join(mnt, "vlmeta", "raw"), [b"bytes"]), ("ok", 0), f"{label}: writing vlmeta/raw")
    finally:
        h.unmount(mnt)
    reread = blosc2.open(path, mode="r")
    check_equal(reread.schunk.vlmeta["note"], {"edited": [1, 2]}, f"{label}: attrs edit read by python-blosc2")
    check_equal(raw_vlmeta(reread.schunk, "raw"), b"bytes", f"{label}: vlmeta edit read by python-blosc2")
    check(reread.schunk.get_chunk(0) == before, f"{label}: the chunk changed with the vlmeta edits")


def main():
    h = Harness("plugin codecs: every codec and filter python-blosc2 writes", watchdog_seconds=600)
    h.require_fuse()
    # python-blosc2 in this process edits OpenZL frames too: with the library loaded
    # here, c-blosc2's dlopen of it by name finds it.
    import blosc2_openzl  # noqa: F401
    entries = []

    def make():
        entries.extend(generate(h))

    h.test("python-blosc2 and its plugins write every codec and filter; python-blosc2 reads them back", make)
    for entry in entries:
        name = entry["name"]
        if entry["readable"]:
            plugin = " (the daemon loads blosc2-openzl's library)" if entry["codec"] == "openzl" else ""
            h.test(f"{name} ({entry['codec']}{''.join('+' + f for f in entry['filters'])}): chunks/, data, "
                   f"array.npy as python-blosc2 reads them; frame.json and index.tsv name the codec{plugin}",
                   reads_as_python_blosc2, h, entry, plugin_env() if plugin else None)
        else:
            why = ["b2nd"] if not entry["b2nd"] else []
            h.test(f"{name} ({entry['codec']}{''.join('+' + f for f in entry['filters'])}): python-blosc2 cannot "
                   f"decompress it; the mount reads EIO with one log line", unreadable_reads_eio, h, entry, why)
    if entries:
        h.test("the j2k-raw frames hold raw codestreams, the others JP2 files", raw_codestreams_are_raw, h, entries)
        edits = [("zfp-acc-f4-2d", 33, smooth, 1e-3), ("zfp-acc-f8-3d-shuffle", 33, ramp, None),
                 ("zfp-prec-f8-4d", 34, smooth, None), ("zfp-rate-f8-3d", 35, smooth, None),
                 ("zfp-rate-f4-2d-bitshuffle", 35, smooth, None), ("ndlz4-u1", 32, steps, 0),
                 ("ndlz8-u1", 32, steps, 0), ("ndlz4-f4-split", 32, ramp, 0), ("ndlz8-u2-split", 32, steps, 0)]
        for name, codec_id, values, tolerance in edits:
            h.test(f"{name}: two chunks overwritten through the mount read in python-blosc2 as its "
                   f"own edit" + ("" if tolerance is None else f", within {tolerance:g} of the values"),
                   edits_read_back_as_python_blosc2s, h, entries, name, codec_id, values, tolerance)
        h.test("j2k: chunk and data writes fail with EOPNOTSUPP and change nothing; vlmeta and attrs edits work",
               data_writes_are_refused, h, entries, "j2k-u8-grey")
        openzl = [e for e in entries if e["codec"] == "openzl"]
        contiguous = [e for e in openzl if not e.get("sparse") and not e.get("store")]
        h.test("openzl without the plugin: EIO, one line naming what to install, frame.json names the codec",
               openzl_without_the_plugin_reads_eio, h, contiguous[0])
        h.test("openzl without the plugin: chunk and data writes fail with EOPNOTSUPP and change nothing; vlmeta "
               "and attrs edits work", data_writes_are_refused, h, entries, contiguous[0]["name"], no_plugin_env(h))
        h.test("openzl: with allow_other the loaded library is logged as a warning", openzl_loaded_is_logged, h,
               contiguous[0])
        h.test("openzl: a plugin_path that is not a Blosc2 plugin, or no file, is refused at mount with one line",
               openzl_library_that_is_no_plugin_is_refused, h, contiguous[0])
        h.test("openzl: a chunk of garbage streams claiming codec 38 reads EIO with one line; the rest reads",
               garbage_openzl_chunks_read_eio, h, entries, "openzl-p6-f8-1d")
        for name in ("openzl-p6-f8-1d", "openzl-p1-f4-2d-shuffle", "openzl-p23-u1-2d"):
            h.test(f"{name}: two chunks overwritten through the mount (the plugin's encoder; an append refused) read in "
                   f"python-blosc2 as its own edit", edits_read_back_as_python_blosc2s, h, entries, name, 38, ramp,
                   0, plugin_env())
        h.test("openzl over nginx: the same files mounted by URL read as python-blosc2 reads them",
               openzl_over_nginx, h, openzl)
        h.test("openzl inside a collection: the same files in one mounted folder read as python-blosc2 reads them",
               openzl_inside_a_collection, h, openzl)
    h.finish()


if __name__ == "__main__":
    main()
