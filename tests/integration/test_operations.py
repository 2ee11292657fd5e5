"""Every operation on every entry (docs/operations.md): each row of the table of
outcomes run on real mounts of fresh copies of datasets python-blosc2 writes: a
contiguous and a sparse frame, an N-d array and a sparse one, an ObjectArray, a
frame of an older layout, a .b2d TreeStore (leaves of their own files, and leaves
embedded in embed.b2e), a .b2z store, a collection of a local folder, and an array
served by nginx; each read-write where it can be and read-only.

The entry kinds come from the daemon's own list (tests/tools/node_kinds prints the
enum of src/mount/node.h): a kind without a row in the table, or without an entry
here to run it on, fails the test. On every tree, the operations that never write
run one after the other on one mount; the daemon must answer after each, the
unmount must succeed and the dataset be byte for byte what it was. Every operation
that may write (`changes` in operations.py), and every one that moves its entry,
runs on a copy of its own: after the unmount python-blosc2 (c-blosc2 underneath:
the reference's own reading) must open the dataset and read every value unchanged,
or changed exactly as the table says.

BLOSC2FS_OPERATIONS_EXPLORE=1 prints what every operation answers instead of
checking (to write the table)."""

import copy
import errno
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import operations  # noqa: E402
from harness import Harness, TestFailure  # noqa: E402
from operations import OPERATIONS, Entry, Table, bytes_after  # noqa: E402
from remote_servers import Nginx  # noqa: E402

import blosc2  # noqa: E402
import msgpack  # noqa: E402
import numpy as np  # noqa: E402

EXPLORE = bool(os.environ.get("BLOSC2FS_OPERATIONS_EXPLORE"))
# Operations that, when they succeed, take the entry away or move it.
MOVES = {"unlink", "rmdir", "rename", "rename-over", "rename-across", "rename-exchange", "rename-whiteout"}
CHUNKSIZE = 4096
SCRATCH_BYTES = b"scratch"  # what a scratch file holds before an operation on it
LEGACY = "v2.0.0-beta.2-zstd-bitshuffle-f8-meta-usermeta.b2frame"
FIXTURES_EXTRA = None  # set in main()


# --- the datasets -----------------------------------------------------------

def fill_frame(schunk):
    schunk.vlmeta["v"] = {"a": 1, "b": [1, 2]}
    schunk.vlmeta["w"] = "text"


def make_schunk(path, contiguous=True):
    data = np.arange(2500, dtype="<i4").tobytes()  # 10,000 bytes: chunks of 4,096, the last one short
    s = blosc2.SChunk(chunksize=CHUNKSIZE, data=data, urlpath=path, mode="w", contiguous=contiguous,
                      cparams={"typesize": 4, "codec": blosc2.Codec.ZSTD}, meta={"m": [1, 2, 3], "n": "meta"})
    fill_frame(s)


def make_array(path, contiguous=True):
    a = blosc2.asarray(np.arange(20 * 30, dtype="<f4").reshape(20, 30), urlpath=path, mode="w",
                       chunks=(10, 15), blocks=(5, 15), contiguous=contiguous, meta={"m": [1, 2, 3], "n": "meta"})
    fill_frame(a.schunk)


def make_objects(path):
    oa = blosc2.ObjectArray(urlpath=path, mode="w")
    oa.append({"a": 1})
    oa.append([1, 2, 3])


def make_store(path, threshold):
    from dataclasses import dataclass

    @dataclass
    class Row:
        id: int = blosc2.field(blosc2.int64())
        score: float = blosc2.field(blosc2.float64())

    with blosc2.TreeStore(path, mode="w", threshold=threshold) as s:
        leaf = blosc2.asarray(np.arange(20 * 30, dtype="<f4").reshape(20, 30), chunks=(10, 15), blocks=(5, 15),
                              meta={"m": [1, 2, 3], "n": "meta"})
        fill_frame(leaf.schunk)
        s["/leaf"] = leaf
        s["/grp/small"] = np.arange(7, dtype="u2")
        s["/grp/sub/more"] = np.arange(5, dtype="f8")
        s.vlmeta["title"] = "root attrs"
        t = blosc2.CTable(Row)
        t.extend([(1, 0.5), (2, 1.5)])
        s["/table"] = t


def make_collection(root):
    os.makedirs(os.path.join(root, "folder"))
    make_schunk(os.path.join(root, "run.b2frame"))
    make_array(os.path.join(root, "folder", "deep.b2nd"))
    for name in ("notes.txt", os.path.join("folder", "readme.txt")):
        with open(os.path.join(root, name), "w") as f:
            f.write("plain text\n")
    os.symlink("notes.txt", os.path.join(root, "link.txt"))


# --- what python-blosc2 reads ----------------------------------------------

def frame_values(obj):
    """A frame's values as python-blosc2 reads them: chunks decompressed, vlmetalayers'
    bytes, metalayers, and an N-d array's items."""
    sc = getattr(obj, "schunk", obj)
    values = {"chunks": [bytes(sc.decompress_chunk(i)) for i in range(sc.nchunks)],
              "vlmeta": {n: bytes(sc.vlmeta.get_vlmeta(n)) for n in sc.vlmeta.keys()},
              "meta": {n: repr(sc.meta[n]) for n in sc.meta.keys()}}
    if isinstance(obj, blosc2.NDArray):
        values["array"] = (tuple(obj.shape), obj[:].tobytes())
    return values


def dataset_values(path):
    """Every dataset at `path` (a frame, a store, a folder of datasets) as python-blosc2
    opens and reads it: {dataset name: its values}."""
    if os.path.isdir(path) and not path.endswith((".b2d", ".b2nd", ".b2frame")):
        out = {}
        for root, dirs, files in os.walk(path):
            for name in sorted(files + [d for d in dirs if d.endswith((".b2d", ".b2frame"))]):
                p = os.path.join(root, name)
                rel = os.path.relpath(p, path)
                if os.path.islink(p):
                    out[rel] = "-> " + os.readlink(p)
                elif name.endswith((".b2frame", ".b2nd", ".b2d", ".b2z")):
                    out.update({f"{rel}{k}": v for k, v in dataset_values(p).items()})
                elif os.path.isfile(p) and not any(part.endswith(".b2d") for part in rel.split(os.sep)):
                    with open(p, "rb") as f:
                        out[rel] = f.read()
            dirs[:] = [d for d in dirs if not d.endswith((".b2d", ".b2frame"))]
        return out
    obj = blosc2.open(path, mode="r")
    if isinstance(obj, (blosc2.TreeStore, blosc2.DictStore)):
        out = {}
        for key in sorted(obj.keys()):
            value = obj[key]
            if isinstance(value, (blosc2.NDArray, blosc2.SChunk)):
                out[key] = frame_values(value)
            elif isinstance(value, blosc2.CTable):
                out[key] = ("table", len(value))
        out["/vlmeta"] = {k: obj.vlmeta[k] for k in obj.vlmeta.keys()}
        return out
    return {"": frame_values(obj)}


# --- what a change does (the table's "changes: ..." cells) -----------------

def apply_change(change, entry, op, values):
    """The values python-blosc2 must read after `op` on `entry` did `change`."""
    fv = values[entry.dataset]
    name = os.path.basename(entry.path)
    if change == "as written":
        if entry.kind == "vlmeta":
            fv["vlmeta"][name] = bytes_after(op, fv["vlmeta"][name])
        elif entry.kind == "attrs":
            text = json.dumps(msgpack.unpackb(fv["vlmeta"][name]), separators=(",", ":")).encode() + b"\n"
            fv["vlmeta"][name] = msgpack.packb(json.loads(bytes_after(op, text)))
        elif entry.kind == "chunk":
            n = int(name)
            fv["chunks"][n] = bytes_after(op, fv["chunks"][n])
        elif entry.kind == "data":
            data = bytes_after(op, b"".join(fv["chunks"]))
            fv["chunks"] = [data[i:i + CHUNKSIZE] for i in range(0, len(data), CHUNKSIZE)]
        elif op != "write-same":  # raw/, meta/, array.npy: their own bytes written back
            raise TestFailure(f"{entry.row}: no model of '{change}' for {op}")
    elif change == "removed":
        if entry.kind in ("vlmeta", "attrs"):
            del fv["vlmeta"][name]
        elif entry.kind in ("chunk", "raw_chunk"):
            fv["chunks"].pop()
        else:
            raise TestFailure(f"{entry.row}: no model of '{change}'")
    elif change == "renamed":
        fv["vlmeta"]["renamed"] = fv["vlmeta"].pop(name)
    elif change == "stored under the new name":  # a scratch file of vlmeta/ (prepare() wrote it)
        fv["vlmeta"]["renamed" if op == "rename" else entry.sibling] = SCRATCH_BYTES
    elif change == "replaces the sibling":
        fv["vlmeta"][entry.sibling] = fv["vlmeta"].pop(name)
    elif change == "a new empty layer":
        fv["vlmeta"][entry.new_name] = b""
    elif change == "a new empty chunk":
        fv["chunks"].append(b"")
    elif change == "the chunk reads as the fill value":
        shape, raw = fv["array"]
        a = np.frombuffer(raw, "<f4").reshape(shape).copy()
        a[0:10, 0:15] = 0
        fv["array"] = (shape, a.tobytes())
        fv["chunks"][0] = bytes(len(fv["chunks"][0]))
    else:
        raise TestFailure(f"{entry.row}: the table says '{change}', which this test has no model of")
    return values


# --- the trees --------------------------------------------------------------

def frame_entries(top, dataset="", array=False, mount_root=True, root_sibling=None, root_elsewhere=None):
    """The entries of one frame's tree at `top` (a mount, a store leaf, a dataset of a collection)."""
    j = lambda *p: os.path.join(top, *p)  # noqa: E731
    nchunks = len(os.listdir(j("chunks")))
    last = f"{nchunks - 1:08d}"
    case = "array" if array else "frame"
    out = [
        Entry(top, "root", "mount" if mount_root else "inside", new_name="newfile", sibling=root_sibling,
              elsewhere=root_elsewhere),
        Entry(j("frame.json"), "frame_json", sibling="index.tsv", elsewhere=j("vlmeta")),
        Entry(j("index.tsv"), "index_tsv", sibling="frame.json", elsewhere=j("vlmeta")),
        Entry(j("data"), "data", case, sibling="frame.json", elsewhere=j("vlmeta")),
        Entry(j("chunks"), "chunks_dir", case, sibling="raw", elsewhere=j("vlmeta"), new_name=f"{nchunks:08d}"),
        Entry(j("raw"), "raw_dir", case, sibling="chunks", elsewhere=j("vlmeta"), new_name=f"{nchunks:08d}.chunk"),
        Entry(j("meta"), "meta_dir", sibling="chunks", elsewhere=j("vlmeta"), new_name="newmeta"),
        Entry(j("vlmeta"), "vlmeta_dir", sibling="chunks", elsewhere=j("meta"), new_name="newlayer"),
        Entry(j("attrs"), "attrs_dir", sibling="chunks", elsewhere=j("meta"), new_name="newattr"),
        Entry(j("meta", "m"), "meta", sibling="n", elsewhere=j("vlmeta")),
        # Not into each other: attrs/v and vlmeta/v are one layer, a rename that changes nothing.
        Entry(j("vlmeta", "v"), "vlmeta", sibling="w", elsewhere=j("meta")),
        Entry(j("attrs", "v"), "attrs", sibling="w", elsewhere=j("meta")),
        Entry(j("vlmeta", ".s.swp"), "scratch", sibling="w", elsewhere=j("attrs")),
    ]
    if array:
        out += [
            Entry(j("chunks", "00000000"), "chunk", "array", sibling=last, elsewhere=j("raw")),
            Entry(j("raw", "00000000.chunk"), "raw_chunk", "array", sibling=last + ".chunk", elsewhere=j("chunks")),
            Entry(j("array.npy"), "array_npy", sibling="frame.json", elsewhere=j("vlmeta")),
            Entry(j("preview.png"), "preview_png", sibling="frame.json", elsewhere=j("vlmeta")),
            Entry(j("zarr.json"), "zarr_json", sibling="frame.json", elsewhere=j("vlmeta")),
            Entry(j("c"), "zarr_dir", "top", sibling="zarr2", elsewhere=j("vlmeta"), new_name="1.partial"),
            Entry(j("c", "0"), "zarr_dir", "inside", sibling="1", elsewhere=j("vlmeta"), new_name="1.partial"),
            Entry(j("c", "0", "0"), "zarr_chunk", sibling="1", elsewhere=j("c", "1")),
            Entry(j("zarr2"), "zarr2_dir", sibling="c", elsewhere=j("vlmeta"), new_name="9.9"),
            Entry(j("zarr2", ".zarray"), "zarray", sibling=".zattrs", elsewhere=j("vlmeta")),
            Entry(j("zarr2", ".zattrs"), "zattrs", sibling=".zarray", elsewhere=j("vlmeta")),
            Entry(j("zarr2", "0.0"), "zarr2_chunk", sibling="0.1", elsewhere=j("c")),
        ]
    else:
        out += [
            Entry(j("chunks", "00000000"), "chunk", "frame, not last", sibling=last, elsewhere=j("raw")),
            Entry(j("chunks", last), "chunk", "frame, last", sibling="00000000", elsewhere=j("raw")),
            Entry(j("raw", "00000000.chunk"), "raw_chunk", "frame, not last", sibling=last + ".chunk",
                  elsewhere=j("chunks")),
            Entry(j("raw", last + ".chunk"), "raw_chunk", "frame, last", sibling="00000000.chunk",
                  elsewhere=j("chunks")),
        ]
    if mount_root:
        out.append(Entry(j(".blosc2fs-cache"), "cache_stats", sibling="frame.json", elsewhere=j("vlmeta")))
    for e in out:
        e.dataset = dataset
    return out


def objects_entries(mnt):
    return [Entry(os.path.join(mnt, "items.jsonl"), "items_jsonl", sibling="frame.json",
                  elsewhere=os.path.join(mnt, "vlmeta"))]


def legacy_entries(mnt):
    return [Entry(os.path.join(mnt, "usermeta"), "usermeta", sibling="frame.json",
                  elsewhere=os.path.join(mnt, "vlmeta"))]


def store_entries(mnt, embedded=False):
    j = lambda *p: os.path.join(mnt, *p)  # noqa: E731
    out = [
        Entry(mnt, "store_group", "top", new_name="newkey"),
        Entry(j("store.json"), "store_json", sibling="zarr.json", elsewhere=j("grp")),
        Entry(j("zarr.json"), "group_zarr_json", sibling="store.json", elsewhere=j("grp")),
        Entry(j("grp"), "store_group", "group", sibling="leaf", elsewhere=j("table"), new_name="newkey"),
        Entry(j("table", "table.csv"), "table_csv", sibling="schema.json", elsewhere=j("grp")),
        Entry(j("table", "schema.json"), "table_schema", sibling="table.csv", elsewhere=j("grp")),
    ]
    # A CTable's parts: read-only leaves (python-blosc2 opens a table only as it wrote it).
    out += [Entry(j("table", "_meta"), "root", "read-only leaf", sibling="_valid_rows", elsewhere=j("grp")),
            Entry(j("table", "_meta", "vlmeta", "kind"), "vlmeta", sibling="schema",
                  elsewhere=j("table", "_meta", "attrs"))]
    for e in out:
        e.dataset = "/leaf"
    for e in out[-2:]:
        e.read_only, e.dataset = True, "/table"
    leaf = frame_entries(j("leaf"), "/leaf", array=True, mount_root=False, root_sibling="grp",
                         root_elsewhere=j("grp"))
    if embedded:  # read-only leaves: a few of their entries
        leaf = [e for e in leaf if e.kind in ("root", "frame_json", "data", "vlmeta_dir", "vlmeta", "chunk",
                                              "array_npy", "zarr_chunk")]
        for e in leaf:
            e.case = "read-only leaf" if e.kind in ("root",) else e.case
            e.read_only = True
    return out + leaf


def collection_entries(mnt):
    j = lambda *p: os.path.join(mnt, *p)  # noqa: E731
    out = [
        Entry(mnt, "collection_dir", "top", new_name="newfile"),
        Entry(j("collection.json"), "collection_json", sibling="notes.txt", elsewhere=j("folder")),
        Entry(j("folder"), "collection_dir", "folder", sibling="run.b2frame", elsewhere=j("run.b2frame"),
              new_name="newfile"),
        Entry(j("folder", "zarr.json"), "group_zarr_json", sibling="readme.txt", elsewhere=mnt),
        Entry(j("notes.txt"), "plain_file", sibling="collection.json", elsewhere=j("folder")),
        Entry(j("link.txt"), "symlink", sibling="notes.txt", elsewhere=j("folder")),
    ]
    for e in out:
        e.dataset = "run.b2frame"
    return out + frame_entries(j("run.b2frame"), "run.b2frame", mount_root=False, root_sibling="folder",
                               root_elsewhere=j("folder"))


class Tree:
    """One dataset (or place) to mount: how it is made, its entries, how it may be mounted."""

    def __init__(self, name, make, entries, modes=("rw", "ro"), served=False, values=None, mount_read_only=False):
        self.name, self.make, self.entries = name, make, entries
        self.mount_read_only = mount_read_only  # mounted read-only even with -o rw (the older layouts)
        # What is compared before and after an operation: what python-blosc2 reads, or
        # the bytes where it reads nothing (c-blosc2 3.x opens no frame of the older layouts).
        self.values = values or dataset_values
        self.modes = modes
        self.served = served  # mounted from nginx


def frame_tree(name, filename, make, entries, **kw):
    return Tree(name, lambda d: make(os.path.join(d, filename)) or filename, entries, **kw)


TREES = [
    frame_tree("frame", "f.b2frame", make_schunk, lambda mnt: frame_entries(mnt)),
    frame_tree("sparse-frame", "f.b2frame", lambda p: make_schunk(p, False), lambda mnt: frame_entries(mnt)),
    frame_tree("array", "a.b2nd", make_array, lambda mnt: frame_entries(mnt, array=True)),
    frame_tree("sparse-array", "a.b2nd", lambda p: make_array(p, False), lambda mnt: frame_entries(mnt, array=True)),
    frame_tree("objects", "o.b2frame", make_objects, objects_entries),
    Tree("older-layout", lambda d: shutil.copyfile(os.path.join(FIXTURES_EXTRA, LEGACY), os.path.join(d, LEGACY))
         and LEGACY, legacy_entries, values=lambda path: {"": snapshot(path)}, mount_read_only=True),
    Tree("store", lambda d: make_store(os.path.join(d, "s.b2d"), 0) or "s.b2d", store_entries),
    Tree("store-embedded", lambda d: make_store(os.path.join(d, "s.b2d"), 1 << 30) or "s.b2d",
         lambda mnt: store_entries(mnt, embedded=True), modes=("rw",)),
    Tree("zip-store", lambda d: make_store(os.path.join(d, "s.b2z"), 0) or "s.b2z",
         lambda mnt: store_entries(mnt, embedded=True), modes=("ro",)),
    Tree("collection", lambda d: make_collection(os.path.join(d, "place")) or "place", collection_entries),
    frame_tree("served-array", "a.b2nd", make_array, lambda mnt: frame_entries(mnt, array=True), modes=("ro",),
               served=True),
]


# --- running ----------------------------------------------------------------

class Matrix:
    def __init__(self, h, table, binary_kinds):
        self.h, self.table = h, table
        self.binary_kinds = binary_kinds
        self.observed = {}  # (tree, mode, row, op) -> what it answered
        self.failures = []
        self.rows_run = set()
        self.kinds_run = set()
        self.cells = 0
        self.nginx = None

    def pristine(self, tree):
        """The tree's dataset made once by python-blosc2, and the copies each run mounts."""
        if not hasattr(tree, "origin"):
            d = self.h.new_dir(tree.name + "-origin")
            tree.origin = os.path.join(d, tree.make(d))
            if tree.served:
                self.nginx = self.nginx or Nginx(self.h.new_dir("served"), os.path.join(self.h.workdir, "nginx"))
                shutil.copyfile(tree.origin, os.path.join(self.nginx.root, os.path.basename(tree.origin)))
        return tree.origin

    def copy(self, tree):
        origin = self.pristine(tree)
        target = os.path.join(self.h.new_dir(tree.name), os.path.basename(origin))
        if os.path.isdir(origin):
            shutil.copytree(origin, target, symlinks=True)
        else:
            shutil.copyfile(origin, target)
        return target

    def mount(self, tree, target, mode):
        if tree.served:
            return self.h.mount(f"{self.nginx.url}/{os.path.basename(target)}", ["-o", mode])
        return self.h.mount(target, ["-o", mode])

    def prepare(self, entry):
        """A scratch file exists before an operation on one."""
        if entry.kind == "scratch" and not os.path.exists(entry.path):
            with open(entry.path, "wb") as f:
                f.write(SCRATCH_BYTES)

    def perform(self, op, entry):
        if (op.name in ("rename-over", "rename-noreplace", "rename-exchange") and not entry.sibling) or \
                (op.name in ("rename-across",) and not entry.elsewhere):
            return "n/a"
        try:
            op.perform(entry)
            return "ok"
        except operations.CloseError as e:
            return errno.errorcode.get(e.errno, str(e.errno)) + " at close"
        except OSError as e:
            return errno.errorcode.get(e.errno, str(e.errno))

    def alive(self, mnt, what):
        try:
            os.stat(mnt)
            os.listdir(mnt)
        except OSError as e:
            raise TestFailure(f"{what}: the daemon no longer answers ({e})")

    def expect(self, tree, mode, entry, op):
        if entry.row not in self.table.kinds:
            return None
        return self.table.outcome(entry.row, op, mount_read_only=mode == "ro" or tree.mount_read_only,
                                  dataset_read_only=entry.read_only)

    def record(self, tree, mode, entry, op, got):
        self.observed[(tree.name, mode, entry.row, op.name)] = got
        self.rows_run.add(entry.row)
        self.kinds_run.add(entry.kind)
        self.cells += 1
        if EXPLORE:
            return
        want = self.expect(tree, mode, entry, op)
        if want is None:
            self.failures.append(f"{entry.row}: no row in docs/operations.md")
        elif got != want.answer:
            self.failures.append(f"{tree.name} {mode}: {op.name} on {entry.row} ({entry.path}) answered {got}, "
                                 f"the table says {want.text}")

    def applies(self, entry, op):
        directory = os.path.isdir(entry.path) and not os.path.islink(entry.path)
        return op.applies == "any" or op.applies == ("directory" if directory else "file")

    def run_tree(self, tree, mode):
        target = self.copy(tree)
        before = snapshot(target)
        mnt = self.mount(tree, target, mode)
        entries = [e for e in tree.entries(mnt) if not (mode == "ro" and e.kind == "scratch")]
        alone, refused = [], []
        for entry in entries:
            for op in OPERATIONS:
                if not self.applies(entry, op):
                    continue
                if mode == "rw" and (op.changes or op.name in MOVES):
                    # What succeeds, or fails only at close, runs on a copy of its own; a
                    # refusal runs here, as what must leave the dataset as it was.
                    want = None if EXPLORE else self.expect(tree, mode, entry, op)
                    if want is None or want.ok or want.at_close:
                        alone.append((entry.row, op))
                        continue
                    refused.append((entry.row, op))
                self.prepare(entry)
                self.record(tree, mode, entry, op, self.perform(op, entry))
                self.alive(mnt, f"{tree.name} {mode}: {op.name} on {entry.row}")
        self.h.unmount(mnt)
        if snapshot(target) != before and not EXPLORE:
            # Which one: each refused operation again on a copy of its own.
            self.failures.append(f"{tree.name} {mode}: operations that change nothing changed {target}")
            alone += refused
        for row, op in alone:
            self.run_alone(tree, row, op)

    def run_alone(self, tree, row, op):
        """One operation on a fresh copy; then python-blosc2 reads the dataset."""
        target = self.copy(tree)
        before = tree.values(target)
        mnt = self.mount(tree, target, "rw")
        try:
            entry = [e for e in tree.entries(mnt) if e.row == row][0]
            self.prepare(entry)
            got = self.perform(op, entry)
            self.record(tree, "rw", entry, op, got)
            self.alive(mnt, f"{tree.name} rw: {op.name} on {row}")
        finally:
            self.h.unmount(mnt)
        if EXPLORE:
            return
        want = self.expect(tree, "rw", entry, op)
        try:
            after = tree.values(target)
        except Exception as e:  # noqa: BLE001 - python-blosc2 cannot open it: the worst outcome
            self.failures.append(f"{tree.name}: after {op.name} on {row}, python-blosc2 cannot read "
                                 f"{target}: {type(e).__name__}: {e}")
            return
        expected = before
        if want is not None and want.change and got == "ok":
            try:
                expected = apply_change(want.change, entry, op.name, copy.deepcopy(before))
            except TestFailure as e:
                self.failures.append(str(e))
                return
        if after != expected:
            self.failures.append(f"{tree.name}: after {op.name} on {row} (answered {got}), python-blosc2 reads "
                                 f"{difference(expected, after)}")


def difference(want, got, path=""):
    """Where two nested values first differ, for a failure message."""
    if isinstance(want, dict) and isinstance(got, dict):
        for k in sorted(set(want) | set(got), key=str):
            if k not in got:
                return f"{path}/{k} missing"
            if k not in want:
                return f"{path}/{k} that should not be there"
            if want[k] != got[k]:
                return difference(want[k], got[k], f"{path}/{k}")
    if isinstance(want, (list, tuple)) and isinstance(got, (list, tuple)):
        if len(want) != len(got):
            return f"{path}: {len(got)} items, not {len(want)}"
        for i, (a, b) in enumerate(zip(want, got)):
            if a != b:
                return difference(a, b, f"{path}[{i}]")
    text = lambda v: (repr(v)[:80] + "...") if len(repr(v)) > 80 else repr(v)  # noqa: E731
    return f"{path}: {text(got)}, not {text(want)}"


def snapshot(path):
    """Every file under path (or the file) with its bytes."""
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return {"": f.read()}
    out = {}
    for root, dirs, files in os.walk(path):
        for name in files:
            p = os.path.join(root, name)
            if os.path.islink(p):
                out[os.path.relpath(p, path)] = "-> " + os.readlink(p)
                continue
            with open(p, "rb") as f:
                out[os.path.relpath(p, path)] = f.read()
    return out


def node_kinds():
    """The daemon's own list of entry kinds (tests/tools/node_kinds)."""
    tool = os.environ.get("BLOSC2FS_NODE_KINDS") or os.path.join(os.path.dirname(args_binary()), "..", "..",
                                                                    "tests", "node_kinds")
    r = subprocess.run([tool], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise TestFailure(f"{tool} failed: {r.stderr.strip()}")
    return r.stdout.split()


def args_binary():
    return sys.argv[sys.argv.index("--binary") + 1]


def every_row(h, matrix):
    try:
        for tree in TREES:
            for mode in tree.modes:
                matrix.run_tree(tree, mode)
    finally:
        if matrix.nginx:
            matrix.nginx.stop()
    if EXPLORE:
        print_observed(matrix)
        return
    kinds = node_kinds()
    missing_row = sorted(set(kinds) - matrix.table.kind_names)
    missing_entry = sorted(set(kinds) - matrix.kinds_run)
    never_run = sorted(set(matrix.table.kinds) - matrix.rows_run)
    problems = list(matrix.failures)
    if missing_row:
        problems.append(f"entry kinds of the daemon without a row in docs/operations.md: {missing_row}")
    if missing_entry:
        problems.append(f"entry kinds of the daemon this test has no entry of: {missing_entry}")
    if never_run:
        problems.append(f"rows of docs/operations.md this test never ran: {never_run}")
    print(f"  {matrix.cells} operations run: {len(OPERATIONS)} operations x {len(matrix.rows_run)} rows "
          f"({len(kinds)} entry kinds) x {sum(len(t.modes) for t in TREES)} mounts of {len(TREES)} trees",
          flush=True)
    if problems:
        raise TestFailure(f"{len(problems)} problems:\n  " + "\n  ".join(problems[:200]))


def rm_rf_everything(h, matrix):
    """What a new user types: `mv` of every top entry, then `rm -rf MNT/*`; the daemon answers
    every one, the unmount succeeds, and python-blosc2 opens every dataset, an N-d array with
    its shape and chunks (what rm removed: the vlmetalayers, a frame's chunks from the end, the
    Zarr view's chunks, which then read as the fill value: docs/operations.md)."""
    for tree in TREES:
        if "rw" not in tree.modes or tree.served:
            continue
        target = matrix.copy(tree)
        before = tree.values(target)
        mnt = matrix.mount(tree, target, "rw")
        try:
            for name in sorted(os.listdir(mnt)):
                subprocess.run(["mv", os.path.join(mnt, name), os.path.join(mnt, name + ".moved")],
                               capture_output=True, timeout=60)
            r = subprocess.run(["rm", "-rf", "--one-file-system"] + [os.path.join(mnt, n) for n in os.listdir(mnt)],
                               capture_output=True, text=True, timeout=120)
            if r.returncode == 0 and os.listdir(mnt):
                raise TestFailure(f"{tree.name}: rm -rf succeeded but left {os.listdir(mnt)}")
            matrix.alive(mnt, f"{tree.name}: rm -rf of every entry")
        finally:
            h.unmount(mnt)
        try:
            after = tree.values(target)
        except Exception as e:  # noqa: BLE001 - python-blosc2 cannot open it
            raise TestFailure(f"{tree.name}: after rm -rf, python-blosc2 cannot read {target}: {e}")
        for name, values in before.items():
            if not (isinstance(values, dict) and "array" in values):
                continue
            shape, raw = after[name]["array"]
            if shape != values["array"][0] or len(after[name]["chunks"]) != len(values["chunks"]):
                raise TestFailure(f"{tree.name}: after rm -rf, the array {name!r} has shape {shape} and "
                                  f"{len(after[name]['chunks'])} chunks, not {values['array'][0]} and "
                                  f"{len(values['chunks'])}")


def print_observed(matrix):
    rows = {}
    for (tree, mode, row, op), got in matrix.observed.items():
        rows.setdefault(row, {}).setdefault(op, {}).setdefault(f"{got}{'' if mode == 'rw' else ' (ro)'}",
                                                               set()).add(tree)
    for row in sorted(rows):
        print(f"== {row}")
        for op in OPERATIONS:
            if op.name in rows[row]:
                answers = rows[row][op.name]
                print(f"   {op.name:18} " + "  ".join(f"{a} [{','.join(sorted(t))}]" for a, t in answers.items()))


def main():
    h = Harness("every operation on every entry", watchdog_seconds=900)
    h.require_fuse()
    operations.COPY_TARGET_DIR = h.new_dir("outside")
    global FIXTURES_EXTRA
    FIXTURES_EXTRA = os.path.join(h.fixtures_extra, "frames")
    matrix = Matrix(h, None if EXPLORE else Table(), None)
    h.test("every row of docs/operations.md on every tree", every_row, h, matrix)
    if not EXPLORE:
        h.test("rm -rf and mv of every entry of every tree", rm_rf_everything, h, matrix)
    h.finish()


if __name__ == "__main__":
    main()
