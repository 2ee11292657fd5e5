"""Mounts every fixture frame (read-only, in place) and compares every file of
the tree with what c-blosc2 reported: data, chunks/, raw/, meta/, vlmeta/,
attrs/, frame.json, index.tsv, array.npy, and stat/ls sizes."""

import ast
import base64
import errno
import json
import os
import re
import subprocess
import sys

import msgpack
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness, TestFailure, check, check_equal, gunzip, read_file, wait_until  # noqa: E402


def to_json_value(value):
    """A msgpack value as blosc2fs shows it in attrs/ (bytes as {"__bytes__": base64})."""
    if isinstance(value, bytes):
        return {"__bytes__": base64.b64encode(value).decode()}
    if isinstance(value, msgpack.ExtType):
        return {"__ext__": [value.code, base64.b64encode(value.data).decode()]}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    return value


def single_msgpack_value(data):
    """(True, value) when data is exactly one msgpack value that JSON can hold."""
    try:
        value = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception:
        return False, None
    return True, value


def stored_chunk(h, name, expect, n):
    """The stored bytes of chunk n, read from the frame itself."""
    entry = expect["chunks"][n]["index_entry"]
    cbytes = expect["chunks"][n]["cbytes"]
    path = h.frame(name)
    if expect["kind"] == "sframe":
        with open(os.path.join(path, "%08X.chunk" % entry), "rb") as f:
            return f.read()
    with open(path, "rb") as f:
        head = f.read(16)
        header_len = int.from_bytes(head[11:15], "big", signed=True)
        f.seek(header_len + entry)
        return f.read(cbytes)


def nd_dtype(expect):
    """The dtype array.npy must have: the b2nd dtype, or |V<typesize> when sizes disagree."""
    typesize = expect["typesize"]
    dtype_text = expect.get("b2nd", {}).get("dtype")
    if dtype_text:
        spec = ast.literal_eval(dtype_text) if dtype_text.startswith("[") else dtype_text
        dtype = np.dtype(spec)
        if dtype.itemsize == typesize:
            return dtype
    return np.dtype(f"V{typesize}")


def assemble_array(data, shape, chunkshape, blockshape, typesize, nchunks):
    """The C-order array from chunk data, from the layout rules (format-notes §7)."""
    ndim = len(shape)
    item = np.dtype(f"V{typesize}")
    out = np.zeros(shape, dtype=item)
    if ndim == 0:
        return np.frombuffer(data[:typesize], dtype=item).reshape(())
    ext_chunk = [-(-c // b) * b for c, b in zip(chunkshape, blockshape)]
    nblocks = [e // b for e, b in zip(ext_chunk, blockshape)]
    grid = [-(-s // c) for s, c in zip(shape, chunkshape)]
    chunk_items = int(np.prod(ext_chunk))
    check_equal(int(np.prod(grid)), nchunks, "chunk grid size")
    for n, coords in enumerate(np.ndindex(*grid)):
        raw = np.frombuffer(data[n * chunk_items * typesize:(n + 1) * chunk_items * typesize], dtype=item)
        blocks = raw.reshape(nblocks + list(blockshape))
        order = [x for d in range(ndim) for x in (d, ndim + d)]
        chunk = blocks.transpose(order).reshape(ext_chunk)
        starts = [c * cs for c, cs in zip(coords, chunkshape)]
        sizes = [min(cs, s - st) for cs, s, st in zip(chunkshape, shape, starts)]
        dst = tuple(slice(st, st + sz) for st, sz in zip(starts, sizes))
        src = tuple(slice(0, sz) for sz in sizes)
        out[dst] = chunk[src]
    return out


def check_frame(h, name):
    expect = h.expect(name)
    nchunks = expect["nchunks"]
    info = h.info(h.frame(name))
    for key in ("nchunks", "nbytes", "typesize", "compcode", "clevel"):
        check_equal(info[key], expect[key], f"--info {key}")
    if expect["chunksize"] > 0:
        check_equal(info["chunksize"], expect["chunksize"], "--info chunksize")
    mnt = h.mount(h.frame(name), ["-o", "ro"])

    nd = "b2nd" in expect or "caterva" in expect["metalayers"]
    want_root = {"frame.json", "index.tsv", "data", "chunks", "raw", "meta", "vlmeta", "attrs", ".blosc2fs-cache"}
    if nd:
        want_root.add("array.npy")
    if has_preview(expect):
        want_root.add("preview.png")
    if has_zarr(expect):
        want_root |= {"zarr.json", "c", "zarr2"}
    if expect.get("usermeta"):  # older layouts' usermeta blob (fixtures-extra README)
        want_root.add("usermeta")
        check_equal(read_file(os.path.join(mnt, "usermeta")).hex(), expect["usermeta"], "usermeta")
    check_equal(set(os.listdir(mnt)), want_root, "root listing")

    # Every regular file: stat size == bytes read; ls -l agrees with stat.
    # (.blosc2fs-cache is live: reading it changes the counts it shows.)
    sizes = {}
    for root, dirs, files in os.walk(mnt):
        for f in files:
            path = os.path.join(root, f)
            if os.path.relpath(path, mnt) == ".blosc2fs-cache":
                continue
            content = read_file(path, piece=65536 + 7)
            if f == "preview.png":  # drawn by that open, which has the kernel ask for its size again
                wait_until(lambda: os.stat(path).st_size == len(content), seconds=10)
            st = os.stat(path)
            check_equal(st.st_size, len(content), f"stat size of {os.path.relpath(path, mnt)}")
            check(st.st_mode & 0o222 == 0, f"{path} is writable: {oct(st.st_mode)}")
            sizes[os.path.relpath(path, mnt)] = len(content)
    for sub in ("", "chunks", "raw"):
        ls = subprocess.run(["ls", "-ln", os.path.join(mnt, sub)], capture_output=True, text=True, timeout=60)
        check_equal(ls.returncode, 0, f"ls -ln {sub} status")
        for line in ls.stdout.splitlines()[1:]:
            fields = line.split()
            if fields[0].startswith("-"):
                rel = os.path.join(sub, fields[-1]) if sub else fields[-1]
                check_equal(int(fields[4]), sizes[rel], f"ls -l size of {rel}")

    # data
    data = bytearray(gunzip(h.expect_file(name, ".data.gz")))
    check_equal(len(data), expect["nbytes"], "expected data length (fixture)")
    # Uninitialized chunks have no defined content (c-blosc2 leaves its buffer
    # as it was, and the fixture recorded that); blosc2fs shows zeros.
    at = 0
    for c in expect["chunks"]:
        if c["special"] == 4:
            data[at:at + c["nbytes"]] = bytes(c["nbytes"])
        at += c["nbytes"]
    data = bytes(data)
    got = read_file(os.path.join(mnt, "data"))
    check(got == data, f"data differs from {name}.data.gz ({len(got)} vs {len(data)} bytes)")

    # chunks/ and raw/
    want_chunks = ["%08d" % i for i in range(nchunks)]
    check_equal(sorted(os.listdir(os.path.join(mnt, "chunks"))), want_chunks, "chunks/ listing")
    check_equal(sorted(os.listdir(os.path.join(mnt, "raw"))), [c + ".chunk" for c in want_chunks], "raw/ listing")
    offset = 0
    for i, c in enumerate(expect["chunks"]):
        piece = read_file(os.path.join(mnt, "chunks", "%08d" % i), piece=4096 + 13)
        check(piece == data[offset:offset + c["nbytes"]], f"chunks/{i:08d} differs from its slice of data")
        offset += c["nbytes"]
        raw = read_file(os.path.join(mnt, "raw", "%08d.chunk" % i))
        if c["index_entry"] < 0:
            check_equal(len(raw), 32, f"raw/{i:08d}.chunk length (special index entry)")
            check_equal(int.from_bytes(raw[4:8], "little"), c["nbytes"], f"raw/{i:08d}.chunk nbytes")
            check_equal((raw[31] >> 4) & 7, c["special"], f"raw/{i:08d}.chunk special kind")
        else:
            check(raw == stored_chunk(h, name, expect, i), f"raw/{i:08d}.chunk differs from the stored chunk")
            check_equal(len(raw), c["cbytes"], f"raw/{i:08d}.chunk length")
    check(not os.path.exists(os.path.join(mnt, "chunks", "%08d" % nchunks)), "a chunk past the end exists")
    check(not os.path.exists(os.path.join(mnt, "chunks", str(nchunks - 1 if nchunks else 0))),
          "a non-canonical chunk name resolves")

    # meta/, vlmeta/, attrs/
    check_equal(sorted(os.listdir(os.path.join(mnt, "meta"))), sorted(expect["metalayers"]), "meta/ listing")
    for layer, hexdata in expect["metalayers"].items():
        check(read_file(os.path.join(mnt, "meta", layer)) == bytes.fromhex(hexdata), f"meta/{layer} differs")
    check_equal(sorted(os.listdir(os.path.join(mnt, "vlmeta"))), sorted(expect["vlmetalayers"]), "vlmeta/ listing")
    want_attrs = {}
    for layer, hexdata in expect["vlmetalayers"].items():
        content = bytes.fromhex(hexdata)
        check(read_file(os.path.join(mnt, "vlmeta", layer)) == content, f"vlmeta/{layer} differs")
        ok, value = single_msgpack_value(content)
        if ok:
            want_attrs[layer] = to_json_value(value)
    check_equal(sorted(os.listdir(os.path.join(mnt, "attrs"))), sorted(want_attrs), "attrs/ listing")
    for layer, value in want_attrs.items():
        text = read_file(os.path.join(mnt, "attrs", layer)).decode()
        check(text.endswith("\n") and "\n" not in text[:-1], f"attrs/{layer} is not one compact JSON line")
        check_equal(json.loads(text), value, f"attrs/{layer}")

    # frame.json and index.tsv
    info = json.loads(read_file(os.path.join(mnt, "frame.json")))
    for key in ("nchunks", "nbytes", "typesize", "compcode", "clevel"):
        check_equal(info[key], expect[key], f"frame.json {key}")
    if expect["chunksize"] > 0:
        check_equal(info["chunksize"], expect["chunksize"], "frame.json chunksize")
    check_equal(sorted(m["name"] for m in info["metalayers"]), sorted(expect["metalayers"]), "frame.json metalayers")
    check_equal(sorted(v["name"] for v in info["vlmetalayers"]), sorted(expect["vlmetalayers"]),
                "frame.json vlmetalayers")
    rows = read_file(os.path.join(mnt, "index.tsv")).decode().splitlines()
    check_equal(len(rows), nchunks + 1, "index.tsv rows (header + one per chunk)")
    for i, row in enumerate(rows[1:]):
        check_equal(row.split("\t")[0], str(i), f"index.tsv row {i} number")

    # array.npy
    if nd:
        path = os.path.join(mnt, "array.npy")
        array_gz = h.expect_file(name, ".array.gz")
        if "b2nd" in expect:
            meta = expect["b2nd"]
            shape, dtype = tuple(meta["shape"]), nd_dtype(expect)
            want = np.frombuffer(gunzip(array_gz), dtype=dtype).reshape(shape)
        else:  # legacy caterva: no expected array; reassemble from the chunk data
            content = bytes.fromhex(expect["metalayers"]["caterva"])
            _, ndim, shape, chunkshape, blockshape = msgpack.unpackb(content)[:5]
            shape = tuple(shape)
            want = assemble_array(data, shape, chunkshape, blockshape, expect["typesize"], nchunks)
            dtype = np.dtype(f"V{expect['typesize']}")
            if "type" in expect["metalayers"]:  # python-caterva's {"dtype": ...} metalayer names it
                dtype = np.dtype(msgpack.unpackb(bytes.fromhex(expect["metalayers"]["type"]))["dtype"])
        for mode in (None, "r"):
            arr = np.load(path, mmap_mode=mode, allow_pickle=False)
            check_equal(arr.shape, shape, f"array.npy shape (mmap_mode={mode})")
            check_equal(arr.dtype, dtype, f"array.npy dtype (mmap_mode={mode})")
            check(not arr.dtype.hasobject, "array.npy dtype holds objects")
            check(arr.tobytes() == want.tobytes(), f"array.npy contents (mmap_mode={mode})")
            del arr


def has_preview(expect):
    """Whether the tree has preview.png (docs/preview.md): an N-d array of a numeric dtype
    with elements; a legacy caterva frame takes its dtype from its `type` metalayer."""
    nd = expect.get("b2nd")
    metas = expect["metalayers"]
    if nd:
        dtype, shape = nd.get("dtype"), nd.get("shape")
    elif "caterva" in metas and "type" in metas:
        dtype, shape = msgpack.unpackb(bytes.fromhex(metas["type"])).get("dtype"), None
    else:
        return False
    numeric = isinstance(dtype, str) and re.fullmatch(r"[<>|=]?(b1|[iu][1248]|f[248])", dtype) is not None
    # A dtype whose item size is not the frame's typesize (dtype_mismatch) is not drawn.
    if not numeric or int(dtype[-1]) != expect["typesize"]:
        return False
    return shape is None or (len(shape) >= 1 and all(s > 0 for s in shape))


def has_zarr(expect):
    """Whether the tree has the Zarr view (docs/zarr.md): an N-d array whose dtype is a
    Zarr v3 core type of the frame's typesize."""
    nd, metas = expect.get("b2nd"), expect["metalayers"]
    if nd:
        dtype = nd.get("dtype")
    elif "caterva" in metas and "type" in metas:  # a legacy caterva frame's dtype is its `type` metalayer's
        dtype = msgpack.unpackb(bytes.fromhex(metas["type"])).get("dtype")
    else:
        return False
    if not isinstance(dtype, str):
        return False
    m = re.fullmatch(r"[<>|=]?(b1|[iu][1248]|f[248]|c(?:8|16))", dtype)
    return m is not None and int(m.group(1)[1:]) == expect["typesize"]


def check_cache_stats(h, name):
    mnt = h.mount(h.frame(name))
    read_file(os.path.join(mnt, "data"))
    text = read_file(os.path.join(mnt, ".blosc2fs-cache")).decode()
    fields = dict(kv.split("=") for kv in text.split())
    check_equal(sorted(fields), sorted(["hits", "misses", "evictions", "bytes", "budget", "entries", "dirty",
                                        "decoded_blocks", "decoded_bytes", "io_uring"]),
                ".blosc2fs-cache fields")
    check(fields["io_uring"] in ("0", "1"), f"io_uring={fields['io_uring']} in .blosc2fs-cache")
    check(int(fields["misses"]) >= 1, f"no misses counted after reading data: {text}")
    check(text.endswith("\n"), ".blosc2fs-cache does not end with a newline")
    # No extended attributes at all: the kernel learns that once and stops asking.
    for path in (mnt, os.path.join(mnt, "data")):
        try:
            os.getxattr(path, "user.blosc2fs.cache")
            raise TestFailure(f"{path} has an extended attribute")
        except OSError as e:
            check_equal(e.errno, errno.EOPNOTSUPP, f"errno of getxattr on {path}")


def main():
    h = Harness("fixture trees")
    h.require_fuse()
    for name in h.frame_names():
        h.test(name, check_frame, h, name)
    for name in h.extra_frame_names():
        h.test("extra " + name, check_frame, h, name)
    h.test("cache statistics file .blosc2fs-cache", check_cache_stats, h, h.frame_names()[0])
    h.finish()


if __name__ == "__main__":
    main()
