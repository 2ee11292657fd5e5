"""python-blosc2 stores (DictStore and TreeStore as .b2d and .b2z, EmbedStore .b2e,
CTable), made at run time by the pinned python-blosc2: `blosc2fs --info STORE`
prints store.json, whose keys are exactly python-blosc2's, whose kind, shape,
dtype, sizes and attributes are what python-blosc2 reads, and whose storage
locations (file, zip member offset, embedded offset and length) hold the very
frame python-blosc2 reads for that key. Mounted, each key is a directory holding
that frame's single-frame tree. Hostile stores give skipped entries or one-line
errors."""

import ast
import errno
import json
import os
import random
import signal
import stat
import subprocess
import sys
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness, TestFailure, check, check_equal, daemon_pid, stop_process, wait_or_kill  # noqa: E402
from writes import sh, vim_substitute  # noqa: E402

import blosc2  # noqa: E402
import numpy as np  # noqa: E402

EXIT_FRAME_INVALID = 3

# A fake Caterva2 server (started by main): python-blosc2's C2Array asks it `api/info/<path>`
# when the reference is made and again when a store's key is read back.
REMOTE_PATH = "root/dir/remote.b2nd"
REMOTE_INFO = {"shape": [10], "chunks": [10], "blocks": [10], "dtype": "<i8",
               "schunk": {"cparams": {"typesize": 8}, "nbytes": 80, "cbytes": 112, "cratio": 0.71,
                          "blocksize": 80, "vlmeta": {}}}
URLBASE = None
INFO_REQUESTS = []


def start_fake_caterva2():
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            INFO_REQUESTS.append(self.path)
            if self.path.split("?")[0] != "/api/info/" + REMOTE_PATH:
                self.send_error(404)
                return
            body = json.dumps(REMOTE_INFO).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    global URLBASE
    URLBASE = f"http://127.0.0.1:{server.server_address[1]}/"
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1"
    return server


def python_store(path, info):
    """The store as python-blosc2 opens it: a TreeStore for the b2tree tag, else a DictStore."""
    cls = blosc2.TreeStore if info["tag"] == "b2tree" else blosc2.DictStore
    return cls(path, mode="r", deserialize="full")


def schunk_of(value):
    return value.schunk if hasattr(value, "schunk") else value


def content(value):
    """What a leaf holds: its chunks decompressed, and its vlmeta."""
    sc = schunk_of(value)
    chunks = [bytes(sc.decompress_chunk(i)) for i in range(sc.nchunks)]
    vl = sc.vlmeta
    attrs = {k: vl[k] for k in vl.keys()}
    return chunks, attrs


def json_safe(v):
    """python values as store.json shows the stored msgpack: python-blosc2 stores a
    tuple as ["__tuple__", items...] and store.json shows what is stored."""
    if isinstance(v, tuple):
        return ["__tuple__"] + [json_safe(x) for x in v]
    if isinstance(v, list):
        return [json_safe(x) for x in v]
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    return json.loads(json.dumps(v, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))


def small_ctable():
    from dataclasses import dataclass

    @dataclass
    class Row:
        id: int = blosc2.field(blosc2.int64())
        score: float = blosc2.field(blosc2.float64())

    t = blosc2.CTable(Row)
    t.extend([(1, 0.5), (2, 1.5)])
    return t


def fill_store(store, kind):
    """Nested groups, attributes at every level, several dtypes and object kinds."""
    store["/ints"] = np.arange(24, dtype="i4").reshape(4, 6)
    store["/grp/floats"] = np.linspace(0, 1, 3000, dtype="f8").reshape(30, 100)
    store["/grp/u2"] = np.arange(7, dtype="u2")
    store["/grp/sub/bools"] = np.array([True, False, True])
    store["/grp/sub/text"] = np.array([b"ab", b"cde"], dtype="S3")
    store["/grp/sub/c16"] = np.array([1 + 2j, 3 - 4j])
    store["/schunk"] = blosc2.SChunk(data=b"hello store " * 500)
    oa = blosc2.ObjectArray()
    oa.append({"a": 1})
    oa.append([1, 2, 3])
    store["/objects"] = oa
    ba = blosc2.BatchArray()
    ba.append([1, 2, 3])
    ba.append(["x", "y"])
    store["/batches"] = ba
    a = blosc2.asarray(np.arange(5, dtype="i8"))
    a.vlmeta["units"] = "m"
    a.vlmeta["scale"] = [1, 2.5]
    store["/with_attrs"] = a
    store["/remote"] = blosc2.C2Array(REMOTE_PATH, urlbase=URLBASE)
    if kind == "tree":
        store.vlmeta["title"] = "root attrs"
        store["/grp"].vlmeta["level"] = 1
        store["/grp/sub"].vlmeta["level"] = 2
        store["/grp/sub"].vlmeta["tags"] = ["a", "b"]
        store.get_subtree("/attrs_only").vlmeta["note"] = "a group of attributes only"
        store["/table"] = small_ctable()  # an object root: one key, its parts under it in store.json


def make_store(path, kind, threshold):
    cls = blosc2.TreeStore if kind == "tree" else blosc2.DictStore
    with cls(path, mode="w", threshold=threshold) as s:
        fill_store(s, kind)


def raw_open(path, offset=0):
    """The frame at `offset` as a plain SChunk (blosc2.open would see a store)."""
    return blosc2.blosc2_ext.open(path, mode="r", offset=offset)


def embed_location(path, info):
    """The embed store as python-blosc2 opens it from our description."""
    where = info["embed"]
    if where["type"] == "zip_member":
        return raw_open(path, where["offset"])
    if where["path"] == ".":
        return raw_open(path)
    return raw_open(os.path.join(path, where["path"]))


def value_at(path, storage, embed):
    """The object python-blosc2 reads at the location store.json gives."""
    t = storage["type"]
    if t == "file":
        return raw_open(os.path.join(path, storage["path"]))
    if t == "zip_member":
        return raw_open(path, storage["offset"])
    if t == "embedded":
        raw = bytes(embed[storage["offset"]:storage["offset"] + storage["length"]])
        return blosc2.from_cframe(raw)
    raise TestFailure(f"no bytes for storage {storage}")


def check_leaf_entry(path, entry, ds, embed):
    """One stored leaf of store.json against what python-blosc2 reads for its key."""
    key = entry["key"]
    check("error" not in entry, f"{path} {key}: {entry.get('error')}")
    value = ds[key]
    if isinstance(value, blosc2.C2Array):
        check_equal(entry["kind"], "c2array", f"{path} {key} kind")
        check_equal(entry["storage"], {"type": "remote", "urlbase": value.urlbase, "path": value.path},
                    f"{path} {key} storage")
        return
    sc = schunk_of(value)
    check_equal(entry["nbytes"], sc.nbytes, f"{path} {key} nbytes")
    check_equal(entry["cbytes"], sc.cbytes, f"{path} {key} cbytes")
    if isinstance(value, blosc2.NDArray):
        check_equal(entry["kind"], "ndarray", f"{path} {key} kind")
        check_equal(tuple(entry["shape"]), value.shape, f"{path} {key} shape")
        # Structured dtypes are written as their descr list's text.
        got = np.dtype(ast.literal_eval(entry["dtype"])) if entry["dtype"].startswith("[") else np.dtype(entry["dtype"])
        check_equal(got, value.dtype, f"{path} {key} dtype")
    elif isinstance(value, blosc2.ObjectArray):
        check_equal(entry["kind"], "objectarray", f"{path} {key} kind")
    elif isinstance(value, blosc2.BatchArray):
        check_equal(entry["kind"], "batcharray", f"{path} {key} kind")
    elif "kind" in sc.vlmeta and sc.vlmeta["kind"] == "ctable":
        check_equal(entry["kind"], "ctable", f"{path} {key} kind")  # a CTable's part (docs/kinds.md)
    else:
        check_equal(entry["kind"], "schunk", f"{path} {key} kind")
    chunks, attrs = content(value)
    check_equal(entry["attrs"], json_safe(attrs), f"{path} {key} attrs")
    at = value_at(path, entry["storage"], embed)
    check(content(at)[0] == chunks, f"{path} {key}: the frame at {entry['storage']} is not the key's")


def check_attrs_entry(path, entry, group_vlmeta, embed, what):
    """A TreeStore group's (or root's) attrs: python-blosc2's vlmeta, its carrier where attrs_storage says."""
    check_equal(entry["attrs"], json_safe(group_vlmeta), f"{path} {what} attrs")
    if "attrs_storage" in entry:
        _, stored = content(value_at(path, entry["attrs_storage"], embed))
        check_equal(json_safe(stored), entry["attrs"], f"{path} {what}: the carrier at {entry['attrs_storage']}")


def check_store(h, path, want_kinds=None):
    info = h.info(path)
    store = python_store(path, info)
    check_equal(sorted(k["key"] for k in info["keys"]), sorted(store.keys()), f"keys of {path}")
    check_equal(info["skipped"], [], f"skipped entries of {path}")
    ds = blosc2.DictStore(path, mode="r", deserialize="full")  # every stored leaf, as stored
    embed = embed_location(path, info)
    stored = 0
    for entry in info["keys"]:
        key = entry["key"]
        if entry["kind"] == "group":
            check(isinstance(store[key], blosc2.TreeStore), f"{path} {key}: python-blosc2 has no group there")
            check_attrs_entry(path, entry, store[key].vlmeta[:], embed, key)
            stored += "attrs_storage" in entry
        elif "parts" in entry:  # an object root (a CTable inside a TreeStore)
            check_equal(entry["kind"], "ctable", f"{path} {key} kind")
            check(isinstance(store[key], blosc2.CTable), f"{path} {key}: python-blosc2 has no CTable there")
            for part in entry["parts"]:
                check_leaf_entry(path, part, ds, embed)
            stored += len(entry["parts"])
        else:
            check_leaf_entry(path, entry, ds, embed)
            stored += 1
    if info["tag"] == "b2tree":
        check_attrs_entry(path, info, store.vlmeta[:], embed, "root")
        stored += "attrs_storage" in info
    else:
        check("attrs" not in info, f"{path}: a DictStore has no tree attributes")
    # Nothing stored is left out: every DictStore key is a key, a part or a carrier.
    check_equal(stored, len(ds.keys()), f"{path}: stored leaves described")
    if want_kinds:
        check_equal(sorted({e["storage"]["type"] for e in info["keys"] if "storage" in e} - {"remote"}), want_kinds,
                    f"storage types of {path}")
    return info


def stores_of_every_layout(h):
    d = h.new_dir("stores")
    for kind in ("tree", "dict"):
        for ext in ("b2d", "b2z"):
            for threshold, kinds in ((0, None), (2**13, None), (10**12, ["embedded"])):
                path = os.path.join(d, f"{kind}-{threshold}.{ext}")
                make_store(path, kind, threshold)
                info = check_store(h, path, kinds)
                check_equal(info["format"], ext, f"format of {path}")
                check_equal(info["tag"], "b2tree" if kind == "tree" else "b2dict", f"tag of {path}")
                types = {e["storage"]["type"] for e in info["keys"] if "storage" in e}
                if threshold == 0:
                    check("embedded" not in types, f"{path}: threshold 0 embedded data leaves: {types}")
                    check(types & {"file", "zip_member"}, f"{path}: no external leaves: {types}")
                if threshold == 2**13:
                    check("embedded" in types and types & {"file", "zip_member"},
                          f"{path}: wanted embedded and external leaves: {types}")
                remote = [e for e in info["keys"] if e["key"] == "/remote"]
                check_equal(remote, [{"key": "/remote", "kind": "c2array",
                                      "storage": {"type": "remote", "urlbase": URLBASE, "path": REMOTE_PATH}}],
                            f"{path}: the C2Array reference")
                got = python_store(path, info)["/remote"]
                check(isinstance(got, blosc2.C2Array) and (got.urlbase, got.path) == (URLBASE, REMOTE_PATH),
                      f"{path}: python-blosc2 reads back {got!r}")
                if kind == "tree":
                    groups = {e["key"]: e for e in info["keys"] if e["kind"] == "group"}
                    check_equal(info["attrs"], {"title": "root attrs"}, f"{path} root attrs")
                    check_equal(groups["/grp"]["attrs"], {"level": 1}, f"{path} /grp attrs")
                    check_equal(groups["/grp/sub"]["attrs"], {"level": 2, "tags": ["a", "b"]}, f"{path} /grp/sub attrs")
                    check_equal(groups["/attrs_only"]["attrs"], {"note": "a group of attributes only"},
                                f"{path} /attrs_only attrs")
                    check(not any("__vlmeta__" in e["key"] for e in info["keys"]), f"{path}: carriers listed as keys")


def embed_store(h):
    path = os.path.join(h.new_dir("b2e"), "e.b2e")
    es = blosc2.EmbedStore(path, mode="w")
    es["/a"] = np.arange(10, dtype="i2")
    es["/b/c"] = blosc2.SChunk(data=b"xyz" * 100)
    es["/gone"] = np.arange(3)
    del es["/gone"]  # leaves a dead gap in the stream
    del es
    info = h.info(path)
    check_equal(info["format"], "b2e", "format")
    check_equal(info["tag"], "b2embed", "tag")
    es = blosc2.EmbedStore(path, mode="r")
    check_equal(sorted(k["key"] for k in info["keys"]), sorted(es.keys()), "keys")
    for entry in info["keys"]:
        raw = bytes(es._store[entry["storage"]["offset"]:entry["storage"]["offset"] + entry["storage"]["length"]])
        check(content(blosc2.from_cframe(raw))[0] == content(es[entry["key"]])[0], f"{entry['key']} content")


def ctable(h):
    from dataclasses import dataclass

    @dataclass
    class Row:
        id: int = blosc2.field(blosc2.int64())
        score: float = blosc2.field(blosc2.float64())
        ok: bool = blosc2.field(blosc2.bool())
        name: str = blosc2.field(blosc2.string(nullable=True))

    d = h.new_dir("ctable")
    for ext in ("b2d", "b2z"):
        path = os.path.join(d, "t." + ext)
        t = blosc2.CTable(Row, urlpath=path, mode="w")
        t.extend([(1, 1.5, True, "a"), (2, 2.5, False, None), (3, 3.5, True, 'h\u00e9llo, "x"')])
        t.delete([1])
        t.close()
        info = check_store(h, path)
        check_equal(len(info["tables"]), 1, f"{path} tables")
        table = info["tables"][0]
        check_equal(table["path"], "/", f"{path} table path")
        names = [c["name"] for c in table["schema"]["columns"]]
        check_equal(names, ["id", "score", "ok", "name"], f"{path} schema columns")


def table_csv(h):
    """table.csv holds the live rows python-blosc2 returns, in schema order, nulls empty."""
    import csv
    import io
    from dataclasses import dataclass

    @dataclass
    class Row:
        id: int = blosc2.field(blosc2.int64())
        small: int = blosc2.field(blosc2.int16(nullable=True))
        score: float = blosc2.field(blosc2.float64(nullable=True))
        ratio: float = blosc2.field(blosc2.float32())
        ok: bool = blosc2.field(blosc2.bool())
        name: str = blosc2.field(blosc2.string(nullable=True))

    d = h.new_dir("tablecsv")
    n = 10000
    rows = []
    for i in range(n):
        name = None if i % 11 == 0 else ("" if i % 13 == 0 else f"né{i}, \"q\"" if i % 5 == 0 else f"row{i}")
        rows.append((i, None if i % 3 == 0 else i - 5000, None if i % 4 == 0 else i / 7, i * 0.5, i % 2 == 0, name))
    for ext in ("b2d", "b2z"):
        path = os.path.join(d, "t." + ext)
        t = blosc2.CTable(Row, urlpath=path, mode="w")
        t.extend(rows)
        t.delete(list(range(0, n, 7)))
        t.close()
        t = blosc2.open(path)

        def text(v):
            if v is None:
                return ""
            if isinstance(v, float):
                return repr(v)
            return str(v)

        want = [["id", "small", "score", "ratio", "ok", "name"]] + [[text(getattr(r, f)) for f in
                                                                     ("id", "small", "score", "ratio", "ok", "name")]
                                                                    for r in t]
        mnt = h.mount(path, ["-o", "ro"])
        try:
            with open(os.path.join(mnt, "table.csv"), "rb") as f:
                raw = f.read()
            check(raw.endswith(b"\r\n"), "table.csv lines end with CRLF")
            got = list(csv.reader(io.StringIO(raw.decode("utf-8"), newline="")))
            check_equal(len(got), len(want), f"{path}: table.csv lines")
            for i, (g, w) in enumerate(zip(got, want)):
                check_equal(g, w, f"{path}: table.csv line {i}")
            meta = blosc2.DictStore(path, mode="r")["/_meta"]
            with open(os.path.join(mnt, "schema.json")) as f:
                check_equal(json.load(f), json.loads(meta.vlmeta["schema"]), f"{path}: schema.json")
            # head: the first lines come at once, without reading the rest.
            r = subprocess.run(["head", "-n", "3", os.path.join(mnt, "table.csv")], capture_output=True, timeout=60)
            check_equal(r.stdout.decode().splitlines(), [",".join(x) for x in want[:3]], "head -n 3")
        finally:
            h.unmount(mnt)


def rezip(src, dst, transform):
    """Copies a zip member by member; transform(name) -> (new name, compress type) or None."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            got = transform(item.filename)
            if got is None:
                continue
            name, compress = got
            zout.writestr(zipfile.ZipInfo(name), zin.read(item.filename), compress_type=compress)


def hostile_stores(h):
    d = h.new_dir("hostile")
    base = os.path.join(d, "base.b2z")
    make_store(base, "tree", 0)

    # A deflated leaf, which python-blosc2 leaves out, is inflated and read;
    # a member compressed another way (bzip2) is left out with a reason.
    deflated = os.path.join(d, "deflated.b2z")
    rezip(base, deflated, lambda n: (n, zipfile.ZIP_DEFLATED if n == "ints.b2nd" else
                                     zipfile.ZIP_BZIP2 if n == "grp/u2.b2nd" else zipfile.ZIP_STORED))
    info = h.info(deflated)
    reference = python_store(base, h.info(base))
    want = set(reference.keys()) - {"/grp/u2"}
    check_equal(sorted(k["key"] for k in info["keys"]), sorted(want), "keys with the deflated leaf, without bzip2's")
    check("/ints" not in python_store(deflated, info).keys(), "python-blosc2 now reads deflated leaves: update")
    check(any("u2.b2nd" in s and "method 12" in s for s in info["skipped"]), f"skipped: {info['skipped']}")
    mnt = h.mount(deflated)
    try:
        check_mounted_leaf(mnt, "/ints", reference["/ints"])
    finally:
        h.unmount(mnt)

    # Names that would leave the mount point are skipped with a reason.
    evil = os.path.join(d, "evil.b2z")
    rezip(base, evil, lambda n: ("../" + n if n == "ints.b2nd" else n, zipfile.ZIP_STORED))
    with zipfile.ZipFile(evil, "a") as z:
        z.writestr("/abs.b2nd", b"x")
        z.writestr("a/../../up.b2nd", b"x")
    info = h.info(evil)
    keys = {k["key"] for k in info["keys"]}
    check(not any(".." in k or k.startswith("//") for k in keys), f"keys escaping: {keys}")
    check_equal(sum(1 for s in info["skipped"] if "'..'" in s or "starting with '/'" in s), 3,
                f"skipped escaping names: {info['skipped']}")

    # A deflated embed.b2e reads as the stored one does.
    deflated_embed = os.path.join(d, "deflated-embed.b2z")
    rezip(base, deflated_embed, lambda n: (n, zipfile.ZIP_DEFLATED if n == "embed.b2e" else zipfile.ZIP_STORED))
    check_equal(sorted(k["key"] for k in h.info(deflated_embed)["keys"]), sorted(reference.keys()),
                "keys of a store with a deflated embed.b2e")

    # An embed.b2e compressed another way, a zip without one, garbage and a truncated archive: one line, status 3.
    bad_embed = os.path.join(d, "bad-embed.b2z")
    rezip(base, bad_embed, lambda n: (n, zipfile.ZIP_BZIP2 if n == "embed.b2e" else zipfile.ZIP_STORED))
    no_embed = os.path.join(d, "no-embed.b2z")
    rezip(base, no_embed, lambda n: None if n == "embed.b2e" else (n, zipfile.ZIP_STORED))
    truncated = os.path.join(d, "truncated.b2z")
    with open(base, "rb") as f:
        whole = f.read()
    with open(truncated, "wb") as f:
        f.write(whole[: len(whole) // 2])
    garbage = os.path.join(d, "garbage.b2z")
    with open(garbage, "wb") as f:
        f.write(b"PK\x03\x04" + os.urandom(5000))
    for path in (bad_embed, no_embed, truncated, garbage):
        r = h.run(["--info", path])
        check_equal(r.returncode, EXIT_FRAME_INVALID, f"--info {path} status ({r.stderr.strip()})")
        check_equal(len(r.stderr.strip().splitlines()), 1, f"--info {path} stderr lines")
        check_equal(r.stdout, "", f"--info {path} stdout")


def check_mounted_leaf(mnt, key, value, storage=None, store_path=None):
    """A leaf's directory holds the single-frame tree of the very frame python-blosc2 reads."""
    d = mnt + key
    if isinstance(value, blosc2.C2Array):
        # A remote reference: frame.json says where the array lives, and there is nothing else.
        check_equal(sorted(os.listdir(d)), ["frame.json"], f"{key}: a C2Array's directory")
        with open(os.path.join(d, "frame.json")) as f:
            check_equal(json.load(f), {"kind": "c2array", "key": key, "urlbase": value.urlbase, "path": value.path},
                        f"{key}/frame.json")
        return
    sc = schunk_of(value)
    with open(os.path.join(d, "frame.json")) as f:
        fj = json.load(f)
    if storage and storage["type"] == "embedded":
        # Not the in-memory copy it is read from: the embed store, and where in its stream.
        embed_file = os.path.join(store_path, "embed.b2e") if store_path.endswith(".b2d") else store_path
        check_equal(fj["path"], embed_file, f"{key}/frame.json path")
        check_equal(fj["embedded"], {"store": store_path, "key": key, "offset": storage["offset"],
                                     "length": storage["length"]}, f"{key}/frame.json embedded")
    check_equal(fj["nbytes"], sc.nbytes, f"{key}/frame.json nbytes")
    check_equal(fj["nchunks"], sc.nchunks, f"{key}/frame.json nchunks")
    chunks, attrs = content(value)
    with open(os.path.join(d, "data"), "rb") as f:
        check(f.read() == b"".join(chunks), f"{key}/data differs from python-blosc2's chunks")
    if isinstance(value, blosc2.NDArray) and not value.dtype.fields:
        got = np.load(os.path.join(d, "array.npy"))
        check(np.array_equal(got, value[:]), f"{key}/array.npy differs from python-blosc2's array")
    for name, v in attrs.items():
        with open(os.path.join(d, "attrs", name)) as f:
            check_equal(json.load(f), json_safe(v), f"{key}/attrs/{name}")


def mounted_trees(h):
    d = h.new_dir("mounted")
    stores = []
    for kind, ext, threshold in (("tree", "b2z", 2**13), ("tree", "b2d", 0), ("dict", "b2z", 10**12),
                                 ("dict", "b2d", 2**13)):
        path = os.path.join(d, f"{kind}-{threshold}.{ext}")
        make_store(path, kind, threshold)
        stores.append(path)
    for path in stores:
        # A .b2z is always read-only; a .b2d here with -o ro (its writes: b2d_leaf_writes).
        mnt = h.mount(path, ["-o", "ro"] if path.endswith(".b2d") else [])
        try:
            info = h.info(path)
            ds = blosc2.DictStore(path, mode="r", deserialize="full")
            keys = sorted(ds.keys())
            with open(os.path.join(mnt, "store.json")) as f:
                check_equal(json.load(f), info, f"{path}: store.json equals --info")
            storage = {e["key"]: e.get("storage") for e in info["keys"]}
            tree = info["tag"] == "b2tree"
            carriers = [k for k in keys if tree and k.endswith("/__vlmeta__")]
            top = {k.split("/")[1] for k in keys if k != "/__vlmeta__" or not tree} | {"store.json", "zarr.json"}
            if "/__vlmeta__" in carriers:
                top.add("attrs")
            check_equal(sorted(os.listdir(mnt)), sorted(top), f"{path}: the root lists the top-level names")
            for key in keys:
                if key in carriers:
                    # A TreeStore's attributes: attrs/ of the group, one JSON file each, as python-blosc2 has them.
                    group = key[: -len("/__vlmeta__")]
                    want = python_store(path, info)[group or "/"].vlmeta[:] if group else python_store(path, info).vlmeta[:]
                    d = os.path.join(mnt + group, "attrs")
                    check_equal(sorted(os.listdir(d)), sorted(want), f"{path}: {d}")
                    for name, v in want.items():
                        with open(os.path.join(d, name)) as f:
                            check_equal(json.load(f), json_safe(v), f"{path}: {d}/{name}")
                    check(not os.path.exists(mnt + key), f"{path}: {key} shown as a leaf")
                    continue
                check_mounted_leaf(mnt, key, ds[key], storage.get(key), path)
            # Read-only: a write fails with EROFS.
            target = os.path.join(mnt + "/ints", "attrs", "new")
            try:
                with open(target, "w") as f:
                    f.write("1")
                raise TestFailure(f"writing {target} succeeded")
            except OSError as e:
                check_equal(e.errno, errno.EROFS, f"errno of writing {target}")
        finally:
            h.unmount(mnt)


def mounted_embed_store(h):
    path = os.path.join(h.new_dir("mountb2e"), "e.b2e")
    es = blosc2.EmbedStore(path, mode="w")
    es["/a"] = np.arange(10, dtype="i2")
    es["/b/c"] = blosc2.SChunk(data=b"xyz" * 100)
    del es
    es = blosc2.EmbedStore(path, mode="r")
    storage = {e["key"]: e["storage"] for e in h.info(path)["keys"]}
    mnt = h.mount(path)
    try:
        for key in es.keys():
            check_mounted_leaf(mnt, key, es[key], storage[key], path)
    finally:
        h.unmount(mnt)


def keys_under_a_leaf(h):
    """A DictStore holding /a and keys under it: /a's directory holds its frame's tree and the
    keys under it; a key named like a file of that tree shows with ".key" appended."""
    path = os.path.join(h.new_dir("nested"), "n.b2d")
    values = {"/a": np.arange(4, dtype="i4"), "/a/b": np.arange(5, dtype="f4"), "/a/b/c": np.arange(6, dtype="u1"),
              "/a/data": np.arange(7, dtype="i2"), "/a/data.key": np.arange(8, dtype="i8"),
              "/x/attrs": np.arange(3, dtype="i4")}
    with blosc2.DictStore(path, mode="w", threshold=0) as s:
        for k, v in values.items():
            s[k] = v
    info = check_store(h, path)
    check_equal(sorted(e["key"] for e in info["keys"]), sorted(values), "keys")
    # "c" is the Zarr view's c/ in an array's directory (docs/zarr.md): taken too.
    shown = {"/a": "a", "/a/b": "a/b", "/a/b/c": "a/b/c.key", "/a/data": "a/data.key", "/a/data.key": "a/data.key.key",
             "/x/attrs": "x/attrs"}  # a DictStore's groups have no attrs/
    mnt = h.mount(path)
    try:
        names = os.listdir(os.path.join(mnt, "a"))
        check({"frame.json", "data", "array.npy", "b", "data.key", "data.key.key"} <= set(names), f"a/ lists {names}")
        with open(os.path.join(mnt, "a", "data"), "rb") as f:
            check_equal(f.read(), np.arange(4, dtype="i4").tobytes(), "a/data is /a's data")
        for key, where in shown.items():
            got = np.load(os.path.join(mnt, where, "array.npy"))
            check(np.array_equal(got, values[key]), f"{where}/array.npy is not {key}")
        for op in (lambda: os.rmdir(os.path.join(mnt, "a", "b")),
                   lambda: os.rename(os.path.join(mnt, "a", "b"), os.path.join(mnt, "a", "bb")),
                   lambda: open(os.path.join(mnt, "a", "b"), "w")):
            try:
                op()
                raise TestFailure("a key under a leaf was changed through the mount")
            except OSError as e:
                check(e.errno in (errno.EPERM, errno.EEXIST, errno.EISDIR, errno.EROFS), f"errno {e.errno}")
    finally:
        h.unmount(mnt)


def tree_attrs_edited(h):
    """A .b2d TreeStore's attributes carried by a frame file of its own are edited through
    the group's attrs/; python-blosc2 reads the new attributes."""
    path = os.path.join(h.new_dir("treeattrs"), "t.b2d")
    with blosc2.TreeStore(path, mode="w", threshold=0) as s:
        s["/grp/x"] = np.arange(3)
        s.vlmeta["title"] = "old"
        s["/grp"].vlmeta["level"] = 1
    mnt = h.mount(path)
    try:
        with open(os.path.join(mnt, "attrs", "title"), "w") as f:
            f.write('"new"')
        with open(os.path.join(mnt, "grp", "attrs", "added"), "w") as f:
            f.write('[1, 2]')
    finally:
        h.unmount(mnt)
    s = blosc2.TreeStore(path, mode="r")
    check_equal(s.vlmeta[:], {"title": "new"}, "root attrs after the edit")
    check_equal(s["/grp"].vlmeta[:], {"level": 1, "added": [1, 2]}, "/grp attrs after the edit")


def many_leaves_stay_bounded(h):
    """More leaves than stay open: every one reads right, in two passes."""
    path = os.path.join(h.new_dir("many"), "many.b2d")
    with blosc2.DictStore(path, mode="w", threshold=0) as s:
        for i in range(150):
            s[f"/g{i % 7}/leaf{i}"] = np.full(10, i, dtype="i4")
    mnt = h.mount(path)
    try:
        for _ in range(2):
            for i in range(150):
                got = np.load(os.path.join(mnt, f"g{i % 7}", f"leaf{i}", "array.npy"))
                check(np.array_equal(got, np.full(10, i, dtype="i4")), f"leaf{i} array.npy")
    finally:
        h.unmount(mnt)


def open_leaf_frames(pid, store):
    """Leaf frames the daemon holds open: the .b2d's leaf files and the
    in-memory files of embedded frames it has open, each counted once however
    many descriptors it has (a writable leaf's editor has its own, an embedded
    frame is read through /proc/self/fd)."""
    files = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            st = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("/memfd:blosc2fs-embedded") or (
                target.startswith(store + "/") and target.endswith((".b2nd", ".b2f", ".b2b"))):
            files.add((st.st_dev, st.st_ino))
    return len(files)


def listing_keeps_leaves_bounded(h):
    """A full listing of 2,000 leaves (every file stat'ed, as `ls -lR` does) keeps
    at most 64 leaf frames open, although the kernel keeps every inode it looked
    up: closed leaves answer to the same inode numbers when opened again, and the
    sizes listed are the sizes read."""
    path = os.path.join(h.new_dir("listing"), "big.b2d")
    n = 2000
    with blosc2.DictStore(path, mode="w", threshold=2048) as s:
        for i in range(n):
            # 100 int32 (embedded) or 1,000 (a frame file of its own).
            a = blosc2.asarray(np.arange(i, i + (100 if i % 2 else 1000), dtype="i4"))
            if i % 3 == 0:
                a.vlmeta["index"] = i
            s[f"/g{i // 500}/s{i // 50 % 10}/leaf{i}"] = a
    mnt = h.mount(path)
    try:
        pid = daemon_pid(mnt)
        seen = {}
        for root, dirs, files in os.walk(mnt):
            for name in dirs + files:
                p = os.path.join(root, name)
                seen[p] = os.lstat(p)
        leaves = [p for p in seen if os.path.basename(p).startswith("leaf") and not os.path.dirname(p).endswith(
            ("meta", "vlmeta", "attrs", "chunks", "raw"))]
        check_equal(len(leaves), n, "leaf directories listed")
        by_ino = {}
        for p, st in seen.items():
            check(st.st_ino not in by_ino, f"{p} and {by_ino.get(st.st_ino)} share inode number {st.st_ino}")
            by_ino[st.st_ino] = p
        # The kernel hashes inode numbers by their low bits: leaves whose numbers
        # differ only in the high bits all land in one bucket, and every lookup
        # then walks thousands of inodes.
        low_bits = {seen[p].st_ino & 0xFFFF for p in leaves}
        check(len(low_bits) >= n * 9 // 10, f"the {n} leaf directories' inode numbers have only "
              f"{len(low_bits)} distinct low 16 bits")
        # glibc's opendir asks the kernel for st_blksize bytes per getdents, and
        # FUSE allocates that much per readdir: small directories say 4 KiB.
        for p, st in seen.items():
            if stat.S_ISDIR(st.st_mode):
                check_equal(st.st_blksize, 4096, f"st_blksize of directory {p}")
        opened = open_leaf_frames(pid, path)
        check(opened <= 64, f"{opened} leaf frames open after listing {n} leaves, more than 64")
        # Leaves closed since: the names looked up keep their inode numbers, and
        # every size listed is what reading gives.
        for i in range(0, n, 7):
            d = os.path.join(mnt, f"g{i // 500}", f"s{i // 50 % 10}", f"leaf{i}")
            names = ["index.tsv", "data", "array.npy", "meta/b2nd", "frame.json"]
            if i % 3 == 0:
                names += ["attrs/index", "vlmeta/index"]
            for name in names:
                p = os.path.join(d, name)
                st = os.lstat(p)
                check_equal(st.st_ino, seen[p].st_ino, f"inode number of {p} after its leaf was closed")
                with open(p, "rb") as f:
                    check_equal(len(f.read()), seen[p].st_size, f"size of {p} as listed")
            if i % 3 == 0:
                with open(os.path.join(d, "attrs", "index")) as f:
                    check_equal(json.load(f), i, f"{d}/attrs/index")
        opened = open_leaf_frames(pid, path)
        check(opened <= 64, f"{opened} leaf frames open after reading, more than 64")
    finally:
        h.unmount(mnt)


def b2d_leaf_writes(h):
    """A .b2d's frame-file leaves are edited like a mounted frame; python-blosc2
    reads the edits back through its store API. Embedded leaves are read-only."""
    path = os.path.join(h.new_dir("writes"), "w.b2d")
    with blosc2.TreeStore(path, mode="w", threshold=0) as s:
        a = blosc2.asarray(np.arange(8, dtype="f8"))
        a.vlmeta["units"] = "m"
        s["/grp/arr"] = a
        s["/sc"] = blosc2.SChunk(chunksize=64, data=b"0123456789abcdef" * 4)
    with blosc2.TreeStore(path, mode="a", threshold=2**20) as s:
        s["/small"] = np.arange(3)  # embedded
    mnt = h.mount(path)
    try:
        attrs = os.path.join(mnt, "grp", "arr", "attrs", "units")
        sh("sed -i 's/\"m\"/\"km\"/' units", cwd=os.path.dirname(attrs))
        vim_substitute(attrs, "km", "mm", backupcopy="auto")
        with open(os.path.join(mnt, "grp", "arr", "attrs", "note"), "w") as f:
            f.write('{"by": "blosc2fs"}')
        with open(os.path.join(mnt, "sc", "data"), "ab") as f:
            f.write(b"appended through the mount")
        try:
            with open(os.path.join(mnt, "small", "attrs", "x"), "w") as f:
                f.write("1")
            raise TestFailure("writing an embedded leaf succeeded")
        except OSError as e:
            check_equal(e.errno, errno.EROFS, "errno of writing an embedded leaf")
    finally:
        h.unmount(mnt)
    s = blosc2.TreeStore(path, mode="r")
    arr = s["/grp/arr"]
    check_equal(arr.vlmeta["units"], "mm", "units after sed -i and vim")
    check_equal(arr.vlmeta["note"], {"by": "blosc2fs"}, "a new attribute")
    check(np.array_equal(arr[:], np.arange(8, dtype="f8")), "array data unchanged")
    sc = s["/sc"]
    check_equal(bytes(sc[:]), b"0123456789abcdef" * 4 + b"appended through the mount", "SChunk data after append")


STORE_EDIT_LOOP = r"""
import os, sys
mnt = sys.argv[1]
attrs = os.path.join(mnt, "grp", "arr", "attrs", "n")
data = os.path.join(mnt, "sc", "data")
i = 0
while True:
    try:
        with open(attrs, "w") as f:
            f.write(str(i))
        with open(data, "ab") as f:
            f.write(bytes([i % 251]) * 100)
    except OSError:
        break
    i += 1
"""


def b2d_kill_during_edits(h):
    """SIGKILL of the daemon while attrs and data of .b2d leaves are being edited:
    python-blosc2 opens the store afterwards and reads every key."""
    rng = random.Random(20261123)
    appended = 0
    for round_number in range(6):
        path = os.path.join(h.new_dir("kill"), "k.b2d")
        with blosc2.TreeStore(path, mode="w", threshold=0) as s:
            s["/grp/arr"] = np.arange(8, dtype="f8")
            s["/sc"] = blosc2.SChunk(chunksize=1000, data=b"x" * 1000)
        mnt = h.new_dir()
        daemon = h.start_foreground([path], mnt, what=f"round {round_number}: the mount")
        editor = None
        try:
            editor = subprocess.Popen([sys.executable, "-c", STORE_EDIT_LOOP, mnt], stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.1, 0.8))
            daemon.send_signal(signal.SIGKILL)
            h.wait_killed(daemon, mnt, f"round {round_number}")
        finally:
            stop_process(daemon)
            h.detach(mnt)
            if editor is not None:
                wait_or_kill(editor)
        s = blosc2.TreeStore(path, mode="r")
        check_equal(sorted(s.keys()), ["/grp", "/grp/arr", "/sc"], f"round {round_number}: keys")
        check(np.array_equal(s["/grp/arr"][:], np.arange(8, dtype="f8")), f"round {round_number}: array")
        data = bytes(s["/sc"][:])
        check(data.startswith(b"x" * 1000) and (len(data) - 1000) % 100 == 0,
              f"round {round_number}: SChunk of {len(data)} bytes")
        appended += (len(data) - 1000) // 100
        arr = s["/grp/arr"]
        vl = arr.vlmeta
        if "n" in vl.keys():
            check(isinstance(vl["n"], int), f"round {round_number}: attrs n is {vl['n']!r}")
    check(appended > 6, f"only {appended} appends were committed before the kills: the test tests little")


def not_a_store(h):
    d = h.new_dir("notstore")
    mnt = h.new_dir("mnt")
    plain = os.path.join(d, "plain.txt")
    with open(plain, "w") as f:
        f.write("just text\n")
    # (A directory that is neither a sparse frame nor a .b2d store mounts as a
    # collection: test_bad_input and test_collections.)
    for path in (plain,):
        r = h.run([path, mnt])
        check_equal(r.returncode, EXIT_FRAME_INVALID, f"mount of {path}")
        lines = r.stderr.strip().splitlines()
        check_equal(len(lines), 1, f"stderr lines of mounting {path}")
        check("nor" in lines[0] and "store" in lines[0], f"message says what it is not: {lines[0]}")


def main():
    h = Harness("python-blosc2 stores", watchdog_seconds=600)
    h.require_fuse()
    start_fake_caterva2()
    h.test("DictStore/TreeStore as .b2d/.b2z, every threshold: store.json equals python-blosc2",
           stores_of_every_layout, h)
    h.test("EmbedStore .b2e with a dead gap", embed_store, h)
    h.test("CTable store: keys, schema", ctable, h)
    h.test("hostile .b2z: skipped entries, one-line errors", hostile_stores, h)
    h.test("table.csv and schema.json of a CTable equal python-blosc2's rows", table_csv, h)
    h.test("mounted stores: every leaf's files are what python-blosc2 reads", mounted_trees, h)
    h.test("a mounted EmbedStore", mounted_embed_store, h)
    h.test("keys under a leaf show in its directory; taken names get .key", keys_under_a_leaf, h)
    h.test("a .b2d TreeStore's attributes edited through attrs/", tree_attrs_edited, h)
    h.test("150 leaves, at most 64 open: all read right twice", many_leaves_stay_bounded, h)
    h.test("a listing of 2,000 leaves keeps at most 64 open; closed leaves keep their inode numbers",
           listing_keeps_leaves_bounded, h)
    h.test("a path that is no frame and no store says what it is not", not_a_store, h)
    h.test(".b2d leaves edited with sed -i, vim, appends; python-blosc2 reads them", b2d_leaf_writes, h)
    h.test("kill -9 during .b2d leaf edits leaves a store python-blosc2 opens", b2d_kill_during_edits, h)
    h.finish()


if __name__ == "__main__":
    main()
