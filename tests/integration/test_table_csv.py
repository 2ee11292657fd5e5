"""table.csv of CTables holding every column kind python-blosc2 4.14.1 writes
(made at run time by the pinned python-blosc2): ints, floats, complex, bools,
fixed-width strings and bytes, utf8 (offsets + bytes), vlstring and vlbytes
(BatchArray msgpack), lists (batch and vl backends), structs, objects,
dictionary-encoded strings, timestamps, ndarray cells, nested column names,
mask and sentinel nulls, deleted rows; as .b2d and .b2z, at the root and as a
subtree of a TreeStore. Each line parsed with Python's csv module equals the
row python-blosc2 returns, with docs/stores.md's conversions (Tables). A large
utf8/vlstring table gives its first lines without being read whole."""

import csv
import io
import itertools
import json
import os
import subprocess
import sys
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness, check, check_equal, daemon_pid, process_status_kib  # noqa: E402

import blosc2  # noqa: E402
import numpy as np  # noqa: E402

# Columns whose cells are JSON text (lists, structs, objects, ndarray cells).
JSON_KINDS = {"list", "struct", "object", "ndarray"}


def cell_text(v):
    """docs/stores.md's text of a value python-blosc2 returns (not for JSON_KINDS)."""
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, (float, complex, bytes)):
        return repr(v)
    if isinstance(v, np.datetime64):
        return str(v)
    return str(v)


def text_of(i):
    return ["plain", "", 'quo"te', "com,ma", "new\nline", "cr\r\nlf", "ünï©ødé ✓", "🎉 emoji"][i % 8] + str(i)


def every_kind_rows(n):
    rows = []
    for i in range(n):
        rows.append((
            i - n // 2,                                                   # int64
            None if i % 5 == 0 else i / 7,                                # float64, mask nulls
            [float("nan"), float("inf"), -0.0, 1e20, 1.5e-7, 0.1][i % 6],  # float32
            complex(i, -i / 3),                                           # complex128
            None if i % 9 == 0 else i % 2 == 0,                           # bool, mask nulls
            None if i % 4 == 1 else text_of(i)[:10],                      # fixed-width string
            None if i % 6 == 2 else bytes([i % 256, 0, 39, 34, 255]) + b"x",  # fixed-width bytes
            None if i % 7 == 3 else text_of(i) * (i % 3),                 # utf8
            None if i % 8 == 5 else text_of(i + 1),                       # vlstring
            None if i % 10 == 4 else bytes(range(i % 7)) + b"'\\",         # vlbytes
            None if i % 11 == 6 else list(range(i % 4)),                  # list[int32], batch
            [text_of(i), "x"][: i % 3],                                   # list[vlstring], vl backend
            None if i % 12 == 7 else {"x": i, "y": text_of(i)},            # struct
            None if i % 13 == 8 else {"k": [i, 1.5, "s", None, True]},    # object
            None if i % 14 == 9 else ["red", "gré,en", 'bl"ue'][i % 3],    # dictionary
            None if i % 15 == 10 else np.datetime64(1_700_000_000_000_000 + i * 1_000_003 - 10**15, "us"),
            np.array([i, i + 0.25], dtype=np.float32),                    # ndarray cell
            i * 3,                                                        # nested name a.b
            255 if i % 16 == 11 else i % 100,                             # int16, sentinel null 255
            "NA" if i % 17 == 12 else text_of(i),                         # utf8, sentinel null "NA"
        ))
    return rows


@dataclass
class EveryKind:
    i64: int = blosc2.field(blosc2.int64())
    f64: float = blosc2.field(blosc2.float64(nullable=True))
    f32: float = blosc2.field(blosc2.float32())
    c128: complex = blosc2.field(blosc2.complex128())
    flag: bool = blosc2.field(blosc2.bool(nullable=True))
    fixed: str = blosc2.field(blosc2.string(max_length=10, nullable=True))
    raw: bytes = blosc2.field(blosc2.bytes(max_length=8, nullable=True))
    text: str = blosc2.field(blosc2.utf8(nullable=True))
    vls: str = blosc2.field(blosc2.vlstring(nullable=True))
    vlb: bytes = blosc2.field(blosc2.vlbytes(nullable=True))
    ints: list[int] = blosc2.field(blosc2.list(blosc2.int32(), nullable=True))
    words: list[str] = blosc2.field(blosc2.list(blosc2.vlstring(), storage="vl"))
    point: dict = blosc2.field(blosc2.struct({"x": blosc2.int64(), "y": blosc2.utf8()}, nullable=True))
    anything: object = blosc2.field(blosc2.object(nullable=True))
    color: str = blosc2.field(blosc2.dictionary(nullable=True))
    when: int = blosc2.field(blosc2.timestamp(unit="us", nullable=True))
    cell: object = blosc2.field(blosc2.ndarray((2,), np.float32))
    nested_b: int = blosc2.field(blosc2.int32())
    small: int = blosc2.field(blosc2.int16(null_value=255))
    tagged: str = blosc2.field(blosc2.utf8(null_value="NA"))


def fill_table(t, n, deleted):
    t.extend(every_kind_rows(n))
    t.rename_column("nested_b", "a.b")
    t.delete(deleted)
    return t


def make_table(n, deleted, urlpath=None):
    """The table in memory, or written where python-blosc2 writes it as it goes
    (CTable(urlpath=...)): its save() of an in-memory table copies varlen
    columns item by item, about 50 s for this one on the CI machine."""
    if urlpath is None:
        return fill_table(blosc2.CTable(EveryKind), n, deleted)
    t = fill_table(blosc2.CTable(EveryKind, urlpath=urlpath, mode="w"), n, deleted)
    t.close()
    return None


ROWS_ITERATED = 300


def plain(v):
    """A NumPy scalar as the Python value it holds (a float32 widened, as
    python-blosc2's rows give it); datetime64 and array cells stay as they are."""
    if isinstance(v, np.generic) and not isinstance(v, np.datetime64):
        return v.item()
    return v


def rows_by_columns(t):
    """python-blosc2's live rows, read a column at a time (`t[name][:]`)."""
    columns = []
    for name in t.col_names:
        values = t[name][:]
        if isinstance(values, np.ma.MaskedArray):
            mask = np.ma.getmaskarray(values)
            columns.append([None if m else plain(x) for x, m in zip(values.data, mask)])
        else:
            columns.append([plain(x) for x in values])
    return [list(r) for r in zip(*columns)]


def as_text(kind, v):
    if v is None:
        return ""
    if kind in JSON_KINDS:
        return json.dumps(v.tolist() if isinstance(v, np.ndarray) else v)
    return cell_text(v)


def check_csv(path_csv, t, kinds, sentinels, what):
    with open(path_csv, "rb") as f:
        raw = f.read()
    check(raw.endswith(b"\r\n"), f"{what}: lines end with CRLF")
    got = list(csv.reader(io.StringIO(raw.decode("utf-8"), newline="")))
    names = list(t.col_names)
    check_equal(got[0], names, f"{what}: header")
    want = rows_by_columns(t)
    check_equal(len(got) - 1, len(want), f"{what}: rows")
    # The public row iteration (namedtuples in schema order) gives these rows: it
    # takes python-blosc2 about 30 ms a row, so the first rows are compared.
    sample = [list(r) for r in itertools.islice(iter(t), ROWS_ITERATED)]
    for i, row in enumerate(sample):
        check_equal([as_text(k, plain(v)) for k, v in zip(kinds, row)],
                    [as_text(k, v) for k, v in zip(kinds, want[i])], f"{what}: row {i} by iteration and by columns")
    for i, (g, w) in enumerate(zip(got[1:], want)):
        check_equal(len(g), len(names), f"{what}: fields of row {i}")
        for name, kind, field, value in zip(names, kinds, g, w):
            if name in sentinels and value == sentinels[name]:
                value = None  # a sentinel null
            where = f"{what}: row {i} column {name}"
            if value is None:
                check_equal(field, "", where)
            elif kind in JSON_KINDS:
                v = value.tolist() if isinstance(value, np.ndarray) else value
                check_equal(json.loads(field), json.loads(json.dumps(v)), where)
            elif isinstance(value, float) and value != value:
                check_equal(field, "nan", where)
            else:
                check_equal(field, cell_text(value), where)


def every_kind(h):
    """Every column kind, at the root (.b2d, .b2z) and inside a TreeStore (.b2z)."""
    n = 5000  # more than one 4,096-row block and several 2,048-item batches
    deleted = [k for k in range(n) if k % 7 == 0 or 1000 <= k < 1100]
    d = h.new_dir("every")
    made = []
    for ext in ("b2d", "b2z"):
        root = os.path.join(d, "root." + ext)
        make_table(n, deleted, urlpath=root)
        made.append((root, None))
    # Inside a TreeStore: the .b2z one, a subtree's members in a zip (a .b2d
    # subtree is the root case's directory layout one level down).
    tree = os.path.join(d, "tree.b2z")
    with blosc2.TreeStore(tree, mode="w") as ts:
        ts["/arr"] = blosc2.arange(10)
        ts["/tables/t"] = make_table(n, deleted)
    made.append((tree, "/tables/t"))
    for path, key in made:
        t = blosc2.open(path) if key is None else blosc2.TreeStore(path, mode="r")[key]
        meta_key = "/_meta" if key is None else key + "/_meta"
        store = blosc2.TreeStore(path, mode="r")
        meta = store[meta_key]
        schema = json.loads(meta.vlmeta["schema"])
        kinds = [c["kind"] for c in schema["columns"]]
        check_equal([c["name"] for c in schema["columns"]], list(t.col_names), f"{path}: schema names")
        sentinels = {c["name"]: c["null_value"] for c in schema["columns"] if "null_value" in c}
        mnt = h.mount(path, ["-o", "ro"])
        try:
            sub = mnt if key is None else os.path.join(mnt, key.lstrip("/"))
            check_csv(os.path.join(sub, "table.csv"), t, kinds, sentinels, f"{path}{key or ''}")
            with open(os.path.join(sub, "schema.json")) as f:
                check_equal(json.load(f), schema, f"{path}: schema.json")
        finally:
            h.unmount(mnt)


@dataclass
class Wide:
    id: int = blosc2.field(blosc2.int64())
    text: str = blosc2.field(blosc2.utf8())
    note: str = blosc2.field(blosc2.vlstring())


def head_of_large(h):
    """head -c of a 100,000-row varlen table: the first lines, the rest unread."""
    n = 100_000
    d = h.new_dir("large")
    path = os.path.join(d, "wide.b2d")
    rng = np.random.default_rng(7)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz ,\"", dtype=np.uint8)
    t = blosc2.CTable(Wide, urlpath=path, mode="w")
    step = 10_000
    for start in range(0, n, step):
        rows = []
        for i in range(start, start + step):
            s = letters[rng.integers(0, len(letters), 600)].tobytes().decode()
            rows.append((i, s, s[::-1]))
        t.extend(rows)
    t.close()
    mnt = h.mount(path, ["-o", "ro"])
    try:
        pid = daemon_pid(mnt)
        before = process_status_kib(pid, "RssAnon")
        r = subprocess.run(["head", "-c", "4000", os.path.join(mnt, "table.csv")], capture_output=True, timeout=300)
        check_equal(r.returncode, 0, "head -c status")
        after_head = process_status_kib(pid, "RssAnon")
        t = blosc2.open(path)
        got = list(csv.reader(io.StringIO(r.stdout.decode("utf-8", "ignore"), newline="")))[:-1]
        check(len(got) >= 3, f"head -c 4000 gave {len(got)} whole lines")
        want = [["id", "text", "note"]] + [[str(t["id"][i]), t["text"][i], t["note"][i]] for i in range(len(got) - 1)]
        check_equal(got, want, "the first lines")
        # The whole text is about 120 MB; reading its head kept far less (anonymous
        # memory: the leaves' mapped file pages are not the daemon's own).
        grown = after_head - before
        print(f"    RssAnon {before} KiB before, {after_head} KiB after head -c 4000 (+{grown} KiB)", flush=True)
        check(grown < 40_000, f"head -c grew the daemon by {grown} KiB: it read more than the first block")
        # And the whole table is there: every row once.
        lines = 0
        with open(os.path.join(mnt, "table.csv"), newline="") as f:
            for _ in csv.reader(f):
                lines += 1
        check_equal(lines, n + 1, "table.csv lines")
        after_all = process_status_kib(pid, "RssAnon")
        print(f"    RssAnon {after_all} KiB after reading all of table.csv", flush=True)
        # Less than the text (about 120 MB): it was never held whole.
        check(after_all - before < 100_000, f"reading the whole table grew the daemon by {after_all - before} KiB")
    finally:
        h.unmount(mnt)


def main():
    h = Harness("table.csv of every CTable column kind", watchdog_seconds=900)
    h.require_fuse()
    h.test("every column kind as .b2d/.b2z, root and TreeStore subtree: table.csv equals python-blosc2's rows",
           every_kind, h)
    h.test("head -c of a 100,000-row varlen table reads only its first block", head_of_large, h)
    h.finish()


if __name__ == "__main__":
    main()
