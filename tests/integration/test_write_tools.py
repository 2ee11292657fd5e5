"""Editing frames through the mount with the tools people use: echo, printf,
cat, truncate, cp, cp -a, mv, rm, sed -i, vim, nano, Python open('w'), dd.
Every test works on a copy of a fixture (contiguous, sparse, N-d), unmounts,
and reads the frame back with the project's own reader (blosc2fs --info and a
fresh read-only mount): the edit is there and nothing else changed; then
python-blosc2 opens the frame and finds what that mount showed."""

import json
import os
import shutil
import sys

import msgpack

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness, check, check_equal, read_file  # noqa: E402
from writes import (expect_state, file_bytes, frame_state, nano_prepend, sh,  # noqa: E402
                    vim_substitute)
from python_blosc2_readback import check_reads_back_in_python_blosc2  # noqa: E402

CONTIGUOUS, SPARSE, NDIM = "metas-vlmetas.b2frame", "sframe-zstd-f4.b2frame", "b2nd-3d-f8.b2nd"
SIXTEEN = "many-vlmetas.b2frame"


def source_file(h, name, content):
    path = os.path.join(h.new_dir("src"), name)
    with open(path, "wb") as f:
        f.write(content)
    return path


def vlmeta_shell_tools(h, name):
    frame = h.copy_fixture(name)
    before = frame_state(h, frame)
    src = source_file(h, "src.txt", b"copied with cp\n")
    old = source_file(h, "old.txt", b"copied with cp -a\n")
    os.chmod(old, 0o600)
    os.utime(old, (1_000_000_000, 1_000_000_000))
    mnt = h.mount(frame)
    vl = os.path.join(mnt, "vlmeta")
    sh("echo hello > vlmeta/greet && echo world >> vlmeta/greet", cwd=mnt)
    check_equal(read_file(os.path.join(vl, "greet")), b"hello\nworld\n", "echo, echo >>")
    sh("printf 'a\\tb' > vlmeta/printed", cwd=mnt)
    sh(f"cat > vlmeta/catted < {src}", cwd=mnt)
    with open(os.path.join(vl, "python"), "w") as f:
        f.write("written by python\n")
    sh("truncate -s 3 vlmeta/greet", cwd=mnt)
    check_equal(os.stat(os.path.join(vl, "greet")).st_size, 3, "size after truncate -s 3")
    sh(f"cp {src} vlmeta/copied && cp -a {old} vlmeta/preserved", cwd=mnt)
    sh("chmod 600 vlmeta/greet && chown 0:0 vlmeta/greet && touch -d 2001-01-01 vlmeta/greet", cwd=mnt)
    sh("mv vlmeta/printed vlmeta/moved && mv vlmeta/moved vlmeta/copied && rm vlmeta/python", cwd=mnt)
    listing = sorted(os.listdir(vl))
    for present in ("greet", "catted", "copied", "preserved"):
        check(present in listing, f"vlmeta/{present} missing from {listing}")
    for absent in ("printed", "moved", "python"):
        check(absent not in listing, f"vlmeta/{absent} still listed: {listing}")
    check_equal(read_file(os.path.join(vl, "copied")), b"a\tb", "mv over an existing layer")
    h.unmount(mnt)
    after = frame_state(h, frame)
    expect_state(before, after, vlmeta={"greet": b"hel", "catted": b"copied with cp\n", "copied": b"a\tb",
                                        "preserved": b"copied with cp -a\n"}, what=name)
    check(json.dumps(after["info"]["metalayers"]) == json.dumps(before["info"]["metalayers"]), "metalayers in --info")
    check_reads_back_in_python_blosc2(frame, after, f"{name} after vlmeta/ edits")
    return frame, after


def attrs_tools(h, name):
    frame = h.copy_fixture(name)
    original = file_bytes(frame)
    # Writing back exactly the text read changes no byte of the frame.
    mnt = h.mount(frame)
    attrs = os.path.join(mnt, "attrs")
    texts = {n: read_file(os.path.join(attrs, n)) for n in os.listdir(attrs)}
    check(texts or name == SPARSE, "the fixture has no attrs/ files")
    for n, text in texts.items():
        with open(os.path.join(attrs, n), "wb") as f:
            f.write(text)
        sh(f"cp attrs/{n} /dev/null && cat attrs/{n} > {h.workdir}/copy.json && cp {h.workdir}/copy.json attrs/{n}",
           cwd=mnt)
    h.unmount(mnt)
    check(file_bytes(frame) == original, "writing back the text read changed the frame")

    before = frame_state(h, frame)
    mnt = h.mount(frame)
    attrs = os.path.join(mnt, "attrs")
    cfg = os.path.join(attrs, "cfg")
    sh("echo '{\"units\": \"m\", \"scale\": [1, 2.5], \"ok\": true, \"none\": null}' > attrs/cfg", cwd=mnt)
    check_equal(read_file(cfg), b'{"units":"m","scale":[1,2.5],"ok":true,"none":null}\n', "attrs/cfg read back")
    check_equal(read_file(os.path.join(mnt, "vlmeta", "cfg")),
                msgpack.packb({"units": "m", "scale": [1, 2.5], "ok": True, "none": None}), "vlmeta/cfg bytes")
    sh("sed -i 's/\"m\"/\"km\"/' attrs/cfg", cwd=mnt)
    vim_substitute(cfg, "km", "mm", backupcopy="auto")
    vim_substitute(cfg, "2.5", "3.5", backupcopy="yes")
    nano_prepend(cfg, " ")  # the same value spelt differently: stored bytes stay
    with open(os.path.join(mnt, "attrs", "list"), "w") as f:
        json.dump(["__tuple__", 1, "two"], f)
    sh("mv attrs/list attrs/tuple", cwd=mnt)
    # attrs/NAME and vlmeta/NAME are one layer: mv from one to the other keeps it (in both).
    sh("mv attrs/tuple vlmeta/ && mv vlmeta/cfg attrs/", cwd=mnt)
    check(os.path.exists(os.path.join(mnt, "vlmeta", "tuple")) and os.path.exists(os.path.join(attrs, "cfg")),
          "mv between attrs/ and vlmeta/ lost a layer")
    listing = sorted(os.listdir(attrs))
    check("cfg" in listing and "tuple" in listing and "list" not in listing, f"attrs/ listing {listing}")
    check(not any(n.endswith("~") or n == "4913" or n.startswith(".") for n in listing),
          f"editor files left in attrs/: {listing}")
    h.unmount(mnt)
    after = frame_state(h, frame)
    want = {"units": "mm", "scale": [1, 3.5], "ok": True, "none": None}
    expect_state(before, after, vlmeta={"cfg": msgpack.packb(want), "tuple": msgpack.packb(["__tuple__", 1, "two"])},
                 what=name)
    check_equal(after["attrs"]["cfg"], json.dumps(want, separators=(",", ":")) + "\n", "attrs/cfg after the edits")
    check_reads_back_in_python_blosc2(frame, after, f"{name} after attrs/ edits")


def metalayer_tools(h):
    frame = h.copy_fixture(CONTIGUOUS)
    before = frame_state(h, frame)
    note = before["meta"]["note"]
    mnt = h.mount(frame)
    path = os.path.join(mnt, "meta", "note")
    with open(path, "r+b") as f:
        f.write(b"X")
    text = note.decode("latin-1")
    letter = next(c for c in text[1:] if c.isalpha())
    other = "Q" if letter != "Q" else "R"
    vim_substitute(path, letter, other, backupcopy="auto", binary=True)
    h.unmount(mnt)
    want = ("X" + text[1:]).replace(letter, other).encode("latin-1")
    check_equal(len(want), len(note), "test setup: the substitution keeps the length")
    after = frame_state(h, frame)
    expect_state(before, after, meta={"note": want}, what="meta/note")
    check_reads_back_in_python_blosc2(frame, after, "after meta/ edits")


def chunk_tools(h, name, frame=None):
    frame = frame or h.copy_fixture(name)
    before = frame_state(h, frame)
    chunks = [bytearray(c) for c in before["chunks"]]
    chunksize = before["info"]["chunksize"]
    mnt = h.mount(frame)
    patch = source_file(h, "patch", b"PATCHED" * 10)
    sh(f"dd if={patch} of=chunks/00000001 bs=7 seek=3 conv=notrunc status=none", cwd=mnt)
    chunks[1][21:91] = b"PATCHED" * 10
    # Appending to data: fill the last chunk, then one more whole chunk.
    fill = chunksize - len(chunks[-1])
    extra = bytes((i * 31 + 7) % 251 for i in range(fill + chunksize))
    sh(f"cat {source_file(h, 'extra', extra)} >> data", cwd=mnt)
    chunks[-1] += extra[:fill]
    chunks.append(bytearray(extra[fill:]))
    check_equal(os.stat(os.path.join(mnt, "data")).st_size, sum(map(len, chunks)), "data size after >>")
    # A new chunk file for N = nchunks appends one.
    new_chunk = bytes(range(256)) * (chunksize // 256) + bytes(chunksize % 256)
    sh(f"cp {source_file(h, 'new', new_chunk)} chunks/{len(chunks):08d}", cwd=mnt)
    chunks.append(bytearray(new_chunk))
    check_equal(sorted(os.listdir(os.path.join(mnt, "chunks")))[-1], f"{len(chunks) - 1:08d}", "last chunk name")
    # truncate: drops and shortens chunks.
    size = sum(map(len, chunks)) - chunksize - chunksize // 2
    sh(f"truncate -s {size} data", cwd=mnt)
    kept, at = [], 0
    for c in chunks:  # cut where the chunks are (a short chunk may sit anywhere)
        if at >= size:
            break
        kept.append(c[:size - at])
        at += len(c)
    chunks = kept
    flat = b"".join(chunks)
    check_equal(read_file(os.path.join(mnt, "data")), flat, "data after truncate")
    h.unmount(mnt)
    after = frame_state(h, frame)
    expect_state(before, after, chunks=[bytes(c) for c in chunks], what=name)
    check_reads_back_in_python_blosc2(frame, after, f"{name} after chunk and data edits")


def ndim_chunk_edit(h):
    frame = h.copy_fixture(NDIM)
    before = frame_state(h, frame)
    mnt = h.mount(frame)
    npy_before = read_file(os.path.join(mnt, "array.npy"))
    sh("dd if=/dev/zero of=chunks/00000004 bs=4096 count=2 conv=notrunc status=none", cwd=mnt)
    sh("echo 'edited through the mount' > vlmeta/note && echo '\"Carol\"' > attrs/author", cwd=mnt)
    npy_after = read_file(os.path.join(mnt, "array.npy"))
    check_equal(len(npy_after), len(npy_before), "array.npy size")
    check(npy_after != npy_before, "array.npy does not show the chunk edit")
    h.unmount(mnt)
    chunks = list(before["chunks"])
    chunks[4] = bytes(8192) + chunks[4][8192:]
    after = frame_state(h, frame)
    expect_state(before, after, chunks=chunks, vlmeta={"note": b"edited through the mount\n",
                                                       "author": msgpack.packb("Carol")}, what=NDIM)
    check_equal(after["npy"], npy_after, "array.npy after a remount")
    check_reads_back_in_python_blosc2(frame, after, f"{NDIM} after a chunk edit")


def raw_chunk_copy(h, name):
    frame = h.copy_fixture(name)
    before = frame_state(h, frame)
    mnt = h.mount(frame)
    sh("cp raw/00000002.chunk raw/00000001.chunk", cwd=mnt)
    h.unmount(mnt)
    chunks = list(before["chunks"])
    chunks[1] = chunks[2]
    after = frame_state(h, frame)
    expect_state(before, after, chunks=chunks, what=f"{name} raw copy")
    check_reads_back_in_python_blosc2(frame, after, f"{name} after a raw chunk copy")


def scratch_files(h, name):
    frame = h.copy_fixture(name)
    before = frame_state(h, frame)
    original = file_bytes(frame)
    mnt = h.mount(frame)
    for d in ("", "vlmeta", "attrs", "meta", "chunks", "raw"):
        for scratch in (".x.swp", "x~", "4913", "sedAb12Cd", "#x#"):
            path = os.path.join(mnt, d, scratch)
            with open(path, "w") as f:
                f.write("scratch " + scratch)
            check_equal(read_file(path), ("scratch " + scratch).encode(), f"reading {d}/{scratch}")
            check(scratch in os.listdir(os.path.join(mnt, d)), f"{d}/{scratch} not listed")
        os.rename(os.path.join(mnt, d, "x~"), os.path.join(mnt, d, ".y"))
        os.unlink(os.path.join(mnt, d, "4913"))
    h.unmount(mnt)
    check(file_bytes(frame) == original, "scratch files changed the frame")
    expect_state(before, frame_state(h, frame), what="scratch files")


def sixteen_layers(h):
    frame = h.copy_fixture(SIXTEEN)
    before = frame_state(h, frame)
    check_equal(len(before["vlmeta"]), 16, "vlmetalayers of the fixture")
    first, second = sorted(before["vlmeta"])[:2]
    check(all(b"\n" not in v for v in before["vlmeta"].values()), "test setup: one-line layers")
    mnt = h.mount(frame)
    sh(f"sed -i 's/^/sed:/' vlmeta/{first}", cwd=mnt)
    # vim ends the last line with a newline ('fixendofline').
    vim_substitute(os.path.join(mnt, "vlmeta", second), "^", "vim:", backupcopy="auto")
    h.unmount(mnt)
    after = frame_state(h, frame)
    expect_state(before, after,
                 vlmeta={first: b"sed:" + before["vlmeta"][first], second: b"vim:" + before["vlmeta"][second] + b"\n"},
                 what="16 vlmetalayers")
    check_reads_back_in_python_blosc2(frame, after, "16 vlmetalayers after sed -i and vim")


def create_and_copy(h, sparse):
    d = h.new_dir("created")
    frame = os.path.join(d, "new-sparse" if sparse else "new.b2frame")
    options = "create,codec=zstd,clevel=3,typesize=4,chunksize=64K" + (",sparse" if sparse else "")
    content = bytes((i // 4) % 256 for i in range(300_000)) + os.urandom(5000)
    src = source_file(h, "big.bin", content)
    mnt = h.mount(frame, ["-o", options])
    sh(f"cp {src} data", cwd=mnt)
    check_equal(read_file(os.path.join(mnt, "data")), content, "data read back before unmounting")
    h.unmount(mnt)
    state = frame_state(h, frame)
    check(state["data"] == content, "the frame does not hold the file copied in")
    info = state["info"]
    check_equal(info["chunksize"], 65536, "chunksize")
    check_equal(info["nchunks"], 5, "nchunks")
    check_equal(info["frame_type"], "sparse" if sparse else "contiguous", "frame type")
    check(json.dumps(info).find("zstd") >= 0, "codec zstd not in --info")
    check_reads_back_in_python_blosc2(frame, state, "-o create then cp" + (" (sparse)" if sparse else ""))


# Frames other writers made whose chunks are not all in order of size: the short
# chunk first (c-blosc2's reorder), and 2.0.0's updated, inserted, deleted and
# reordered chunks.
REORDERED, MUTATED_200 = "reordered-short-first-lz4-i4.b2frame", "v2.0.0-lz4hc-shuffle-i8-mutated.b2frame"


def blosc2_state(path):
    """What c-blosc2 (python-blosc2) reads from the frame: chunks one by one and
    the vlmetalayers' raw bytes (not every layer is one msgpack value)."""
    import blosc2
    schunk = blosc2.open(path, mode="r")
    vlmeta = schunk.vlmeta
    raw = super(type(vlmeta), vlmeta)
    return {"chunks": [bytes(schunk.decompress_chunk(i)) for i in range(schunk.nchunks)],
            "nbytes": schunk.nbytes, "chunksize": schunk.chunksize,
            "vlmeta": {name: bytes(raw.get_vlmeta(name)) for name in vlmeta.keys()}}


def expect_blosc2_reads(frame, state, what):
    """python-blosc2 reads back exactly what the mount shows."""
    got = blosc2_state(frame)
    check_equal(len(got["chunks"]), len(state["chunks"]), f"{what}: python-blosc2 nchunks")
    for i, (a, b) in enumerate(zip(got["chunks"], state["chunks"])):
        check(a == b, f"{what}: python-blosc2 reads chunk {i} differently ({len(a)} vs {len(b)} bytes)")
    check_equal(got["nbytes"], len(state["data"]), f"{what}: python-blosc2 nbytes")
    check_equal(got["vlmeta"], state["vlmeta"], f"{what}: python-blosc2 vlmetalayers")
    return got


def make_sparse_short_middle(h):
    """A sparse frame made by python-blosc2 whose short chunk sits in the middle:
    five chunks appended, the short last one moved to index 2 by reorder_offsets."""
    import blosc2
    import numpy as np
    path = os.path.join(h.new_dir("sparse-short"), "short-middle.b2frame")
    schunk = blosc2.SChunk(chunksize=4096, urlpath=path, contiguous=False, mode="w",
                           cparams={"typesize": 4, "codec": blosc2.Codec.LZ4})
    for i in range(4):
        schunk.append_data(np.arange(i * 1024, (i + 1) * 1024, dtype=np.int32).tobytes())
    schunk.append_data(np.arange(100, dtype=np.int32).tobytes() * 1)
    schunk.reorder_offsets([0, 1, 4, 2, 3])
    schunk.vlmeta["origin"] = "python-blosc2 reorder_offsets"
    del schunk
    return path


def special_short_chunk_first(h):
    """A zeros chunk that is short, moved first by python-blosc2's reorder_offsets:
    stored as a special index entry, so no header gives its size; blosc2fs infers it
    from nbytes (c-blosc2 itself sizes a special entry that is not last as the chunksize)."""
    import blosc2
    import numpy as np
    path = os.path.join(h.new_dir("special-short"), "zeros-first.b2frame")
    schunk = blosc2.SChunk(chunksize=4096, urlpath=path, mode="w", cparams={"typesize": 4})
    full = [np.arange(i * 1024, (i + 1) * 1024, dtype=np.int32).tobytes() for i in range(1, 4)]
    for chunk in full:
        schunk.append_data(chunk)
    schunk.append_data(bytes(400))
    schunk.reorder_offsets([3, 0, 1, 2])
    del schunk
    want = [bytes(400)] + full
    state = frame_state(h, path)
    check_equal([len(c) for c in state["chunks"]], [len(c) for c in want], "chunk sizes")
    check(state["chunks"] == want, "chunks differ")
    check(state["info"]["chunksize"] == 4096, "chunksize")


def short_chunk_tools(h, frame):
    """Overwrite, rewrite the short chunk, append to and truncate data of a frame
    whose short chunk is not the last; the frame c-blosc2 reads afterwards is
    what the mount showed at each step."""
    before = frame_state(h, frame)
    chunks = [bytearray(c) for c in before["chunks"]]
    chunksize = before["info"]["chunksize"]
    short = [i for i, c in enumerate(chunks) if len(c) < chunksize]
    check(len(short) == 1 and short[0] < len(chunks) - 1, f"test setup: one short chunk, not last ({short})")
    k = short[0]
    expect_blosc2_reads(frame, before, "the frame as made")
    mnt = h.mount(frame)
    # dd into the short chunk, and into data across its end.
    patch = source_file(h, "patch", b"PATCHED" * 5)
    sh(f"dd if={patch} of=chunks/{k:08d} bs=5 seek=2 conv=notrunc status=none", cwd=mnt)
    chunks[k][10:45] = b"PATCHED" * 5
    start = sum(map(len, chunks[:k])) + len(chunks[k]) - 7
    sh(f"dd if={patch} of=data bs=1 seek={start} conv=notrunc status=none", cwd=mnt)
    flat = bytearray(b"".join(chunks))
    flat[start:start + 35] = b"PATCHED" * 5
    at = 0
    for c in chunks:
        c[:] = flat[at:at + len(c)]
        at += len(c)
    check(read_file(os.path.join(mnt, "data")) == bytes(flat), "data after dd")
    # The short chunk rewritten whole with cp (same size, new bytes).
    new_short = bytes((i * 13 + 5) % 256 for i in range(len(chunks[k])))
    sh(f"cp {source_file(h, 'short', new_short)} chunks/{k:08d}", cwd=mnt)
    chunks[k] = bytearray(new_short)
    check_equal(os.stat(os.path.join(mnt, "data")).st_size, sum(map(len, chunks)), "data size after cp")
    h.unmount(mnt)
    mid = frame_state(h, frame)
    expect_state(before, mid, chunks=[bytes(c) for c in chunks], what="dd and cp")
    check_equal(mid["info"]["chunksize"], chunksize, "chunksize after same-size edits")
    expect_blosc2_reads(frame, mid, "after dd and cp")

    # >> data: a whole chunk and a bit more; the bit is a second short chunk, so
    # the frame becomes one of variable chunks (docs/writing.md, "Short chunks anywhere").
    mnt = h.mount(frame)
    extra = bytes((i * 31 + 7) % 251 for i in range(chunksize + 100))
    sh(f"cat {source_file(h, 'extra', extra)} >> data", cwd=mnt)
    chunks += [bytearray(extra[:chunksize]), bytearray(extra[chunksize:])]
    check_equal(os.stat(os.path.join(mnt, "data")).st_size, sum(map(len, chunks)), "data size after >>")
    sh("echo appended by echo >> data", cwd=mnt)
    chunks[-1] += b"appended by echo\n"
    h.unmount(mnt)
    after = frame_state(h, frame)
    expect_state(before, after, chunks=[bytes(c) for c in chunks], what=">> data")
    check_equal(after["info"]["chunksize"], 0, "chunksize once two chunks are short")
    expect_blosc2_reads(frame, after, "after >> data")

    # truncate: into the chunk after the short one.
    mnt = h.mount(frame)
    size = sum(map(len, chunks[:k + 1])) + 1000
    sh(f"truncate -s {size} data", cwd=mnt)
    chunks = chunks[:k + 1] + [chunks[k + 1][:1000]]
    check(read_file(os.path.join(mnt, "data")) == b"".join(chunks), "data after truncate")
    h.unmount(mnt)
    after = frame_state(h, frame)
    expect_state(before, after, chunks=[bytes(c) for c in chunks], what="truncate data")
    expect_blosc2_reads(frame, after, "after truncate")


def other_writers_frame_tools(h, name):
    """The chunk tools on a copy of a frame another writer made, and python-blosc2
    reads the result back as the mount showed it."""
    frame = h.copy_fixture(name)
    chunk_tools(h, name, frame)
    expect_blosc2_reads(frame, frame_state(h, frame), name)


def other_writers_layer_tools(h, name):
    """The vlmeta/ shell tools on a copy of a frame another writer made, read back by python-blosc2."""
    frame, after = vlmeta_shell_tools(h, name)
    expect_blosc2_reads(frame, after, name)


def main():
    h = Harness("writing through the mount", watchdog_seconds=180)
    h.require_fuse()
    for tool in ("vim", "nano", "sed", "truncate", "dd"):
        if not shutil.which(tool):
            print(f"cannot run: {tool} is missing", flush=True)
            h.failed += 1
            h.finish()
    for name in (CONTIGUOUS, SPARSE, NDIM):
        h.test(f"echo, printf, cat, python, truncate, cp, cp -a, chmod, mv, rm in vlmeta/ ({name})",
               vlmeta_shell_tools, h, name)
        h.test(f"attrs/: JSON in, msgpack stored; sed -i, vim, nano; text read back unchanged ({name})",
               attrs_tools, h, name)
        h.test(f"scratch files never enter the frame ({name})", scratch_files, h, name)
    for name in (CONTIGUOUS, SPARSE):
        h.test(f"dd into chunks/N, >> data, new chunks/N, truncate data ({name})", chunk_tools, h, name)
        h.test(f"cp raw/N.chunk over another ({name})", raw_chunk_copy, h, name)
    h.test(f"short chunk first: dd, cp chunks/N, >> data, truncate; python-blosc2 reads it back ({REORDERED})",
           lambda: short_chunk_tools(h, h.copy_fixture(REORDERED)))
    h.test("short chunk in the middle of a python-blosc2 sparse frame: same tools, python-blosc2 reads it back",
           lambda: short_chunk_tools(h, make_sparse_short_middle(h)))
    h.test("a short zeros chunk (special index entry) moved first by python-blosc2 reads as its own size",
           special_short_chunk_first, h)
    for name in (REORDERED, MUTATED_200):
        h.test(f"dd into chunks/N, >> data, new chunks/N, truncate data; python-blosc2 reads it back ({name})",
               other_writers_frame_tools, h, name)
        h.test(f"echo, printf, cat, python, truncate, cp, mv, rm in vlmeta/; python-blosc2 reads it back ({name})",
               other_writers_layer_tools, h, name)
        h.test(f"scratch files never enter the frame ({name})", scratch_files, h, name)
    h.test("meta/: same-length edits with python and vim", metalayer_tools, h)
    h.test("N-d array: chunk edit shows in array.npy; vlmeta and attrs edits", ndim_chunk_edit, h)
    h.test("a frame at 16 vlmetalayers: sed -i and vim still edit layers", sixteen_layers, h)
    h.test("-o create, then cp a file to data (contiguous)", create_and_copy, h, False)
    h.test("-o create,sparse, then cp a file to data", create_and_copy, h, True)
    h.finish()


if __name__ == "__main__":
    main()
