"""What a frame is (docs/kinds.md): frames that python-blosc2 makes here, at run
time, mount with frame.json naming their kind and decoding its metadata, and
with the kind's own view, compared with what python-blosc2 reads from them:
items.jsonl of ObjectArray, BatchArray and ListArray; array.npy of pack_tensor
SChunks; no array.npy for lazy carriers; a proxy cache's unfetched chunks
failing with EIO; store markers named."""

import base64
import errno
import io
import json
import math
import os
import subprocess
import sys
import time

import blosc2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness, TestFailure, check, check_equal, read_file  # noqa: E402


def as_json(value):
    """The JSON blosc2fs shows for a value python-blosc2 read (README "attrs/NAME")."""
    if isinstance(value, bytes):
        return {"__bytes__": base64.b64encode(value).decode()}
    if isinstance(value, tuple):
        return ["__tuple__"] + [as_json(v) for v in value]
    if isinstance(value, list):
        return [as_json(v) for v in value]
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return {"__float__": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, np.generic):
        return as_json(value.item())
    return value


VALUES = [1, -7, 2**40, "two", "ü" * 40, 3.5, None, True, False, b"\x00\x01\xff", (1, "a"), [1, [2, "x"]],
          {"k": (1, 2), "n": {"deep": [None, b"z"]}}, float("nan"), ""]


def read_error(path):
    try:
        read_file(path)
    except OSError as e:
        return e.errno
    return None


def items_of(mnt):
    text = read_file(os.path.join(mnt, "items.jsonl")).decode()
    check(text == "" or text.endswith("\n"), "items.jsonl ends with a newline")
    check_equal(os.stat(os.path.join(mnt, "items.jsonl")).st_size, len(text.encode()), "items.jsonl size")
    return [json.loads(line) for line in text.splitlines()]


def frame_json(mnt):
    return json.loads(read_file(os.path.join(mnt, "frame.json")))


def objectarray(h):
    path = os.path.join(h.new_dir("src"), "obj.b2f")
    oa = blosc2.ObjectArray(urlpath=path, mode="w")
    for v in VALUES:
        oa.append(v)
    del oa
    want = [as_json(v) for v in blosc2.open(path)]
    mnt = h.mount(path)  # read-write: items.jsonl still refuses writes
    doc = frame_json(mnt)
    check_equal(doc["kind"], "objectarray", "kind")
    check_equal(doc["kind_details"]["nitems"], len(VALUES), "nitems")
    got = items_of(mnt)
    # NaN != NaN in Python; both sides are {"__float__": "nan"} here.
    check_equal(got, want, "items.jsonl against what python-blosc2 reads")
    check("array.npy" not in os.listdir(mnt), "an ObjectArray has no array.npy")
    try:
        with open(os.path.join(mnt, "items.jsonl"), "a") as f:
            f.write("x")
        raise TestFailure("items.jsonl took a write")
    except OSError as e:
        check_equal(e.errno, errno.EACCES, "items.jsonl write error")
    check_equal(os.stat(os.path.join(mnt, "items.jsonl")).st_mode & 0o777, 0o444, "items.jsonl mode")
    # An item rewritten through chunks/ (its msgpack bytes): items.jsonl shows the
    # new value after the commit, and python-blosc2 reads it.
    import msgpack
    with open(os.path.join(mnt, "chunks", "00000001"), "wb") as f:
        f.write(msgpack.packb({"changed": [1, 2]}))
    check_equal(items_of(mnt)[1], {"changed": [1, 2]}, "items.jsonl after a chunk write")
    h.unmount(mnt)
    check_equal(blosc2.open(path)[1], {"changed": [1, 2]}, "python-blosc2 reads the rewritten item")


def batcharray(h):
    path = os.path.join(h.new_dir("src"), "batch.b2b")
    ba = blosc2.BatchArray(items_per_block=2, urlpath=path, mode="w")
    batches = [VALUES[:5], VALUES[5:6], VALUES[6:], [{"x": i} for i in range(300)]]
    for b in batches:
        ba.append(b)
    del ba
    back = blosc2.open(path)
    want = [as_json(item) for batch in back for item in batch]
    lengths = [len(batch) for batch in back]
    mnt = h.mount(path, ["-o", "ro"])
    doc = frame_json(mnt)
    check_equal(doc["kind"], "batcharray", "kind")
    check_equal(doc["kind_details"]["batch_lengths"], lengths, "batch_lengths")
    check_equal(doc["kind_details"]["nitems"], sum(lengths), "nitems")
    check_equal(doc["kind_details"]["items_per_block"], 2, "items_per_block")
    check_equal(doc["vlblocks"], True, "the batches are VL-block chunks")
    check_equal(items_of(mnt), want, "items.jsonl against what python-blosc2 reads")


def batcharray_arrow(h):
    """serializer "arrow": pyarrow is not in the test venv, so the frame is the one
    BatchArray writes with its tag saying arrow (the payloads are not read)."""
    path = os.path.join(h.new_dir("src"), "arrow.b2b")
    meta = {"batcharray": {"version": 1, "serializer": "arrow", "items_per_block": 4, "arrow_schema": b"schema"}}
    s = blosc2.SChunk(chunksize=-1, urlpath=path, mode="w", meta=meta, cparams={"typesize": 1})
    s.append_data(b"\xff\xff\xff\xffnot msgpack")
    s.vlmeta["_batch_array_metadata"] = {"batch_lengths": [4]}
    del s
    opened = raw_open(path)  # blosc2.open() would need pyarrow for the schema
    check_equal(opened.meta["batcharray"]["serializer"], "arrow", "python-blosc2 reads the serializer")
    mnt = h.mount(path, ["-o", "ro"])
    doc = frame_json(mnt)
    check_equal(doc["kind"], "batcharray", "kind")
    check_equal(doc["kind_details"]["serializer"], "arrow", "serializer")
    check_equal(doc["kind_details"]["items_file"], None, "no items file for arrow")
    check("items.jsonl" not in os.listdir(mnt), "no items.jsonl for arrow batches")


def listarray(h, storage):
    path = os.path.join(h.new_dir("src"), f"list-{storage}.b2b")
    la = blosc2.ListArray(item_spec=blosc2.int64(), storage=storage, batch_rows=2, urlpath=path, mode="w")
    rows = [[1, 2], [], [3], [4, 5, 6], [7]]
    for r in rows:
        la.append(r)
    la.flush()
    del la
    back = blosc2.open(path)
    want = [as_json(list(r)) for r in back]
    check_equal(want, rows, "python-blosc2 reads the rows back")
    mnt = h.mount(path, ["-o", "ro"])
    doc = frame_json(mnt)
    check_equal(doc["kind"], "listarray", "kind")
    check_equal(doc["kind_details"]["backend"], storage, "backend")
    check_equal(items_of(mnt), want, "items.jsonl against what python-blosc2 reads")


def lazyexpr(h):
    d = h.new_dir("src")
    a = blosc2.asarray(np.arange(10.0), urlpath=os.path.join(d, "a.b2nd"), mode="w")
    b = blosc2.asarray(np.ones(10), urlpath=os.path.join(d, "b.b2nd"), mode="w")
    path = os.path.join(d, "expr.b2nd")
    (a + b * 2).save(path)
    back = blosc2.open(path, deserialize="full")
    check_equal(type(back).__name__, "LazyExpr", "python-blosc2 reads a LazyExpr")
    mnt = h.mount(path, ["-o", "ro"])
    doc = frame_json(mnt)
    check_equal(doc["kind"], "lazyexpr", "kind")
    details = doc["kind_details"]
    # python-blosc2 renames the operands when it parses the expression back, so
    # the recipe is compared by what it computes, operands taken from frame.json.
    operands = {name: blosc2.open(os.path.join(d, op["urlpath"])) for name, op in details["operands"].items()}
    check_equal(sorted(os.path.basename(o.urlpath) for o in operands.values()),
                sorted(os.path.basename(o.urlpath) for o in back.operands.values()), "operand files")
    got = blosc2.lazyexpr(details["expression"], operands=operands)[:]
    check(np.array_equal(got, back[:]), f"{details['expression']} computes what python-blosc2 reads")
    check("array.npy" not in os.listdir(mnt), "a lazy carrier has no array.npy")
    check("array" not in doc, "frame.json has no array for a lazy carrier")


def lazyudf(h):
    d = h.new_dir("src")
    a = blosc2.asarray(np.arange(10.0), urlpath=os.path.join(d, "a.b2nd"), mode="w")

    def plus_one(inputs, output, offset):
        output[:] = inputs[0] + 1

    @blosc2.dsl_kernel
    def twice_plus_one(x):
        return x * 2 + 1

    # A plain Python UDF is saved in the legacy form (LazyArray + _LazyArray),
    # a DSL kernel in the current one (b2o).
    for name, func, form in (("legacy", plus_one, "LazyArray (legacy)"), ("dsl", twice_plus_one, "b2o")):
        path = os.path.join(d, f"udf-{name}.b2nd")
        blosc2.lazyudf(func, (a,), np.float64).save(path)
        back = blosc2.open(path, deserialize="full")
        check_equal(type(back).__name__, "LazyUDF", f"python-blosc2 reads a LazyUDF ({name})")
        mnt = h.mount(path, ["-o", "ro"])
        doc = frame_json(mnt)
        check_equal(doc["kind"], "lazyudf", f"kind ({name})")
        check_equal(doc["kind_details"]["form"], form, f"form ({name})")
        recipe = json.dumps(doc["kind_details"]["recipe"])
        check(func.__name__ in recipe, f"the recipe names the function ({name}): {recipe[:300]}")
        check("array.npy" not in os.listdir(mnt), f"a lazy UDF has no array.npy ({name})")
        h.unmount(mnt)


def pack_tensor(h):
    d = h.new_dir("src")
    arrays = {
        "int32-2d": np.arange(12, dtype=np.int32).reshape(3, 4),
        "f8-3d-many-chunks": np.linspace(0, 1, 60000).reshape(30, 40, 50),
        "structured": np.array([(1, 2.0, (3, 4)), (5, 6.0, (7, 8))],
                               dtype=[("a", "<i4"), ("b", "<f8"), ("c", "<i2", (2,))]),
        "scalar": np.array(7.5),
    }
    for name, arr in arrays.items():
        path = os.path.join(d, name + ".bl2")
        blosc2.save_array(arr, path, mode="w", chunksize=4096)
        back = blosc2.load_array(path)
        mnt = h.mount(path, ["-o", "ro"])
        doc = frame_json(mnt)
        check_equal(doc["kind"], "pack_tensor", f"kind ({name})")
        got = np.load(io.BytesIO(read_file(os.path.join(mnt, "array.npy"))))
        check_equal(got.shape, back.shape, f"array.npy shape ({name})")
        check_equal(got.dtype, back.dtype, f"array.npy dtype ({name})")
        check(got.tobytes() == back.tobytes(), f"array.npy values ({name})")
        h.unmount(mnt)


def raw_open(path):
    """The cache container itself: blosc2.open() would rebuild the proxy over its
    source, which it refuses without deserialize="full" (and a remote source would
    need the network). The proxy opens its cache this way (proxy.py _reopen_cache)."""
    return blosc2.blosc2_ext.open(path, "r", 0)


def proxy_cache(h):
    d = h.new_dir("src")
    src = blosc2.asarray(np.arange(100, dtype=np.int32), chunks=(10,), blocks=(5,),
                         urlpath=os.path.join(d, "src.b2nd"), mode="w")
    cache = os.path.join(d, "cache.b2nd")
    p = blosc2.Proxy(src, urlpath=cache, mode="w")
    p[0:12]  # fetches chunks 0 and 1
    p[55:58]  # and chunk 5
    del p
    opened = raw_open(cache)  # kept alive while its vlmeta is read
    fetched = opened.schunk.vlmeta["proxy-fetched"]
    want_fetched = [n for n in range(10) if fetched[n // 8] >> (n % 8) & 1]
    check_equal(want_fetched, [0, 1, 5], "python-blosc2's fetched bitmap")
    mnt = h.new_dir()
    log_path = os.path.join(h.workdir, "proxy.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([h.binary, "-f", "-o", "ro", cache, mnt], stdout=subprocess.DEVNULL, stderr=log,
                                stdin=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while not os.path.ismount(mnt) and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        check(os.path.ismount(mnt), "the foreground mount did not appear")
        h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
        doc = frame_json(mnt)
        check_equal(doc["kind"], "proxy", "kind")
        details = doc["kind_details"]
        check_equal(details["chunks_fetched"], [[0, 1], [5, 5]], "chunks_fetched")
        check_equal(details["source"]["local_abspath"], src.urlpath, "source")
        tsv = read_file(os.path.join(mnt, "index.tsv")).decode().splitlines()
        check_equal(tsv[0].split("\t")[-1], "fetched", "index.tsv column")
        check_equal([row.split("\t")[-1] for row in tsv[1:]],
                    ["yes" if n in (0, 1, 5) else "no" for n in range(10)], "index.tsv fetched column")
        raw = src[:].tobytes()
        for n in range(10):
            chunk = os.path.join(mnt, "chunks", "%08d" % n)
            if n in (0, 1, 5):
                check(read_file(chunk) == raw[n * 40:(n + 1) * 40], f"fetched chunk {n} holds the source's data")
            else:
                check_equal(read_error(chunk), errno.EIO, f"unfetched chunk {n}")
        check_equal(read_error(os.path.join(mnt, "array.npy")), errno.EIO, "array.npy with unfetched chunks")
        check_equal(read_error(os.path.join(mnt, "data")), errno.EIO, "data with unfetched chunks")
        h.unmount(mnt)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    lines = [line for line in open(log_path).read().splitlines() if "never fetched" in line]
    check(lines, "a log line says the chunk was never fetched")
    check_equal(len([line for line in lines if "chunks/00000002" in line]), 1, "log lines for one failed read")
    check(all(src.urlpath in line for line in lines), f"the log lines name the source: {lines[:2]}")


def proxy_fully_fetched(h):
    """Once every chunk was fetched, array.npy and data are the source's."""
    d = h.new_dir("src")
    src = blosc2.asarray(np.arange(60, dtype=np.float32).reshape(6, 10), chunks=(2, 10), blocks=(1, 10),
                         urlpath=os.path.join(d, "src.b2nd"), mode="w")
    cache = os.path.join(d, "cache.b2nd")
    p = blosc2.Proxy(src, urlpath=cache, mode="w")
    p[:]
    del p
    mnt = h.mount(cache, ["-o", "ro"])
    check_equal(frame_json(mnt)["kind_details"]["chunks_fetched"], [[0, 2]], "chunks_fetched")
    got = np.load(io.BytesIO(read_file(os.path.join(mnt, "array.npy"))))
    check(np.array_equal(got, src[:]), "array.npy of a fully fetched cache is the source")


def proxy_secrets(h):
    """A Caterva2 proxy cache as python-blosc2 wrote them with the auth token in
    its urlpath tuple (older versions; now None): frame.json redacts it."""
    path = os.path.join(h.new_dir("src"), "c2cache.b2nd")
    meta = {"proxy-source": {"source_kind": "caterva2", "local_abspath": None,
                             "urlpath": ("root/x.b2nd", "https://user:pw@cat2.example.org/?token=T0KEN", "S3CRET"),
                             "caterva2_env": False}}
    a = blosc2.empty((20,), dtype=np.int16, chunks=(10,), urlpath=path, mode="w", meta=meta)
    del a
    opened = raw_open(path)
    check_equal(opened.schunk.meta["proxy-source"]["urlpath"][2], "S3CRET",
                "python-blosc2 reads the token back")
    mnt = h.mount(path, ["-o", "ro"])
    text = read_file(os.path.join(mnt, "frame.json")).decode()
    for secret in ("S3CRET", "T0KEN", "user:pw"):
        check(secret not in text, f"frame.json shows {secret}")
    source = json.loads(text)["kind_details"]["source"]
    check_equal(source["urlpath"], ["__tuple__", "root/x.b2nd",
                                    "https://<redacted>@cat2.example.org/?token=<redacted>", "<redacted>"],
                "redacted urlpath")
    check_equal(json.loads(text)["kind_details"]["chunks_fetched"], [], "nothing fetched")
    check_equal(read_error(os.path.join(mnt, "chunks", "00000000")), errno.EIO, "unfetched chunk")


def stores(h):
    d = h.new_dir("src")
    e = blosc2.EmbedStore(os.path.join(d, "x.b2e"), mode="w")
    e["/a"] = np.arange(5)
    del e
    with blosc2.DictStore(os.path.join(d, "x.b2d"), mode="w", threshold=2**20) as ds:
        ds["/k"] = np.arange(3)
    with blosc2.TreeStore(os.path.join(d, "t.b2d"), mode="w", threshold=2**20) as ts:
        ts["/g/k"] = np.arange(3)
    for path, kind in ((os.path.join(d, "x.b2e"), "embedstore"), (os.path.join(d, "x.b2d", "embed.b2e"), "dictstore"),
                       (os.path.join(d, "t.b2d", "embed.b2e"), "treestore")):
        # An embed store mounts as a store (docs/stores.md): store.json names its frame's kind.
        mnt = h.mount(path, ["-o", "ro"])
        store = json.loads(read_file(os.path.join(mnt, "store.json")))
        check_equal(store["kind"], kind, f"kind of {os.path.relpath(path, d)}")
        h.unmount(mnt)


def many_items_paged(h):
    """An ObjectArray of many chunks (items.jsonl is made 16 chunks at a time):
    reads at any offset give the bytes of the whole text."""
    path = os.path.join(h.new_dir("src"), "many.b2f")
    oa = blosc2.ObjectArray(urlpath=path, mode="w")
    values = [{"i": i, "s": "x" * (i % 37), "t": (i, None)} for i in range(700)]
    oa.extend(values)
    del oa
    want = [as_json(v) for v in blosc2.open(path)]
    mnt = h.mount(path, ["-o", "ro"])
    name = os.path.join(mnt, "items.jsonl")
    whole = read_file(name)
    check_equal([json.loads(line) for line in whole.decode().splitlines()], want, "items.jsonl of 700 items")
    fd = os.open(name, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
    try:
        for offset in (0, 1, 999, 4096, len(whole) // 2, len(whole) - 3):
            got = os.pread(fd, 5000, offset)
            check(got == whole[offset:offset + 5000], f"pread at {offset}")
    finally:
        os.close(fd)


def ctable(h):
    d = h.new_dir("src")
    import dataclasses

    @dataclasses.dataclass
    class Row:
        a: int = blosc2.field(blosc2.int64())
        b: float = blosc2.field(blosc2.float64())

    t = blosc2.CTable(Row, urlpath=os.path.join(d, "t.b2d"), mode="w")
    t.append((1, 2.0))
    t.append((3, 4.5))
    t.close()
    back = blosc2.open(os.path.join(d, "t.b2d"))
    mnt = h.mount(os.path.join(d, "t.b2d", "_meta.b2f"), ["-o", "ro"])
    doc = frame_json(mnt)
    check_equal(doc["kind"], "ctable", "kind of _meta")
    check_equal(doc["kind_details"]["part"], "meta", "part")
    check_equal([c["name"] for c in doc["kind_details"]["schema"]["columns"]], list(back.col_names), "columns")


def plain(h):
    d = h.new_dir("src")
    s = blosc2.SChunk(chunksize=64, data=bytes(range(200)), urlpath=os.path.join(d, "s.b2frame"), mode="w")
    del s
    a = blosc2.asarray(np.arange(10), urlpath=os.path.join(d, "a.b2nd"), mode="w")
    del a
    for name, kind in (("s.b2frame", "schunk"), ("a.b2nd", "ndarray")):
        mnt = h.mount(os.path.join(d, name), ["-o", "ro"])
        doc = frame_json(mnt)
        check_equal(doc["kind"], kind, f"kind of {name}")
        check_equal(doc["kind_details"], None, f"no kind details for {name}")
        check("items.jsonl" not in os.listdir(mnt), f"no items.jsonl for {name}")
        h.unmount(mnt)


def main():
    h = Harness("kinds of frames python-blosc2 writes", watchdog_seconds=180)
    h.require_fuse()
    h.test("ObjectArray: items.jsonl", objectarray, h)
    h.test("BatchArray: items.jsonl across blocks and batches", batcharray, h)
    h.test("BatchArray of Arrow batches: no items.jsonl", batcharray_arrow, h)
    h.test("ListArray (batch backend): items.jsonl", listarray, h, "batch")
    h.test("ListArray (vl backend): items.jsonl", listarray, h, "vl")
    h.test("LazyExpr carrier: expression and operands, no array.npy", lazyexpr, h)
    h.test("LazyUDF carriers, legacy and current: no array.npy", lazyudf, h)
    h.test("pack_tensor / save_array: array.npy", pack_tensor, h)
    h.test("proxy cache: unfetched chunks fail with EIO and one log line", proxy_cache, h)
    h.test("proxy cache fully fetched: array.npy is the source", proxy_fully_fetched, h)
    h.test("proxy cache: secrets redacted in frame.json", proxy_secrets, h)
    h.test("stores: embed.b2e named", stores, h)
    h.test("ObjectArray of many chunks: items.jsonl read at any offset", many_items_paged, h)
    h.test("CTable: its _meta part named, schema decoded", ctable, h)
    h.test("plain SChunk and NDArray", plain, h)
    h.finish()


if __name__ == "__main__":
    main()
