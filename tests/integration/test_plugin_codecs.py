"""Every codec and filter python-blosc2 writes beyond the stream codecs, read through
the mount with no plugin loaded in the daemon: ZFP in its three modes, NDLZ, NDCELL,
NDMEAN and INT_TRUNC (inside c-blosc2), J2K and HTJ2K (PyPI plugins blosc2-j2k and
blosc2-htj2k: JP2 files, raw codestreams, the float frame, both HTJ2K backends), Grok
(frames in tests/data/plugin-codecs, written once: blosc2-grok cannot write under
python-blosc2 4.x) and OpenZL (blosc2-openzl: no library decodes it here, so its data
reads EIO with a log line naming the codec and the plugin).

plugin_frames.py writes the frames and python-blosc2's reading of them in one process
per plugin configuration. Each mount must give the same `chunks/N`, `data` and
`array.npy`, bit for bit (lossy OpenHTJ2K within 2: OpenJPEG rounds differently);
frame.json and index.tsv must name the codec. ZFP and NDLZ frames edited through the
mount must read back in python-blosc2 (c-blosc2's own decoder); a J2K chunk write is
refused with EOPNOTSUPP and changes nothing, while its attrs still take edits."""

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
from writes import write_errno  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GROK_DATA = os.path.join(HERE, "..", "data", "plugin-codecs")
GROUPS = ["builtin", "j2k", "j2k-raw", "j2k-float", "htj2k", "htj2k-grok", "htj2k-float", "openzl"]


def generate(h):
    """Writes every frame; returns [(name, path, codec, tolerance, expect_npz)]."""
    outdir = h.new_dir("frames")
    frames = []
    for group in GROUPS:
        r = subprocess.run([sys.executable, os.path.join(HERE, "plugin_frames.py"), group, outdir],
                           capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise TestFailure(f"plugin_frames.py {group} failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
        for line in r.stdout.splitlines():
            entry = json.loads(line)
            name = entry["name"]
            frames.append((name, os.path.join(outdir, name + ".b2nd"), entry["codec"], entry["tolerance"],
                           os.path.join(outdir, name + ".expect.npz")))
    for name in sorted(os.listdir(GROK_DATA)):
        if name.endswith(".b2nd"):
            stem = name[:-len(".b2nd")]
            frames.append((stem, os.path.join(GROK_DATA, name), "grok", 0,
                           os.path.join(GROK_DATA, stem + ".expect.npz")))
    return frames


def same(got, want, tolerance, what):
    check_equal(len(got), len(want), f"{what}: size")
    if tolerance == 0:
        if got != want:
            a, b = np.frombuffer(got, np.uint8), np.frombuffer(want, np.uint8)
            first = int(np.flatnonzero(a != b)[0])
            raise TestFailure(f"{what}: differs from python-blosc2 first at byte {first} "
                              f"(got {a[first]}, want {b[first]}), {int((a != b).sum())} bytes differ")
        return
    diff = np.abs(np.frombuffer(got, np.uint8).astype(int) - np.frombuffer(want, np.uint8).astype(int))
    check(diff.max() <= tolerance, f"{what}: differs by {diff.max()} (> {tolerance}) from python-blosc2")


def reads_as_python_blosc2(h, name, path, codec, tolerance, expect_path):
    expect = np.load(expect_path)
    nchunks = len([k for k in expect.files if k.startswith("chunk")])
    mnt = h.mount(path, ["-o", "ro"])
    try:
        info = json.loads(read_file(os.path.join(mnt, "frame.json")))
        check_equal(info["codec"], codec, f"{name}: frame.json codec")
        check_equal(info["decodable"], True, f"{name}: frame.json decodable")
        check_equal(info["codec_info"]["decodable"], True, f"{name}: frame.json codec_info.decodable")
        if tolerance:
            check("+-2" in (info["codec_info"]["note"] or ""), f"{name}: frame.json notes the lossy HTJ2K rounding")
        names = sorted(os.listdir(os.path.join(mnt, "chunks")))
        check_equal(len(names), nchunks, f"{name}: number of chunks")
        chunks = []
        for i, chunk in enumerate(names):
            got = read_file(os.path.join(mnt, "chunks", chunk))
            same(got, expect[f"chunk{i}"].tobytes(), tolerance, f"{name}: chunks/{chunk}")
            chunks.append(got)
        check(read_file(os.path.join(mnt, "data")) == b"".join(chunks), f"{name}: data is not the chunks in order")
        array = np.load(os.path.join(mnt, "array.npy"))
        want = expect["array"]
        check_equal(array.dtype, want.dtype, f"{name}: array.npy dtype")
        check_equal(array.shape, want.shape, f"{name}: array.npy shape")
        same(array.tobytes(), want.tobytes(), tolerance, f"{name}: array.npy")
        rows = read_file(os.path.join(mnt, "index.tsv")).decode().splitlines()
        header = rows[0].split("\t")
        codecs = {row.split("\t")[header.index("codec")] for row in rows[1:]}
        check(codecs <= {codec, "-"}, f"{name}: index.tsv codecs {codecs}, want {codec}")
    finally:
        h.unmount(mnt)


def check_frames(h, frames):
    for name, path, codec, tolerance, expect in frames:
        if codec != "openzl":
            reads_as_python_blosc2(h, name, path, codec, tolerance, expect)
    codecs = {codec for _, _, codec, _, _ in frames}
    for codec in ("zfp_acc", "zfp_prec", "zfp_rate", "ndlz", "j2k", "htj2k", "grok", "zstd", "lz4"):
        check(codec in codecs, f"no frame of codec {codec} was made")


def raw_codestreams_are_raw(h, frames):
    """The j2k-raw group must really hold raw codestreams (FF4F), the others JP2 files."""
    for name, path, codec, _, _ in frames:
        if codec != "j2k" or "float" in name:
            continue
        mnt = h.mount(path, ["-o", "ro"])
        try:
            chunk = read_file(os.path.join(mnt, "raw", "00000000.chunk"))
        finally:
            h.unmount(mnt)
        first_block = int.from_bytes(chunk[32:36], "little") + 4
        payload = chunk[first_block:first_block + 12]
        want = b"\xff\x4f" if name.endswith("-raw") else b"\x00\x00\x00\x0cjP  "
        check(payload.startswith(want[:len(want)]), f"{name}: block 0 starts {payload.hex()}, want {want.hex()}")


def openzl_reads_eio_naming_the_plugin(h, frames):
    [(name, path, _, _, _)] = [f for f in frames if f[2] == "openzl"]
    info = h.info(path)
    check_equal(info["codec"], "openzl", "openzl: --info codec")
    check_equal(info["decodable"], False, "openzl: --info decodable")
    mnt = h.new_dir()
    log_path = os.path.join(h.workdir, "openzl.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([h.binary, "-f", "-o", "ro", path, mnt], stdout=subprocess.DEVNULL, stderr=log,
                                stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + PATIENCE
        while not os.path.ismount(mnt) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        check(os.path.ismount(mnt), "the openzl mount did not appear")
        h.mounts[mnt] = os.minor(os.stat(mnt).st_dev)
        try:
            read_file(os.path.join(mnt, "chunks", "00000000"))
            raise TestFailure("openzl: chunks/00000000 read without a decoder")
        except OSError as e:
            check_equal(e.errno, errno.EIO, "openzl: errno of reading chunks/00000000")
        check(json.loads(read_file(os.path.join(mnt, "frame.json")))["codec"] == "openzl", "openzl frame.json")
    finally:
        h.unmount(mnt)
        try:
            proc.wait(timeout=PATIENCE)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=PATIENCE)
    errors = [line for line in open(log_path).read().splitlines() if " error: " in line]
    check(len(errors) == 1, f"openzl: one error line for one failed read, got {errors}")
    check("openzl" in errors[0] and "blosc2-openzl" in errors[0] and "chunk 0" in errors[0],
          f"openzl: the log line names the codec, the plugin and the chunk: {errors[0]}")


def copy_frame(h, frames, name):
    [path] = [f[1] for f in frames if f[0] == name]
    dst = os.path.join(h.new_dir("edit"), name + ".b2nd")
    shutil.copyfile(path, dst)
    return dst


def chunk_header(raw):
    return {"compformat": raw[2] >> 5, "udcompcode": raw[22], "meta": raw[23], "nbytes": int.from_bytes(raw[4:8], "little"),
            "cbytes": int.from_bytes(raw[12:16], "little")}


def edits_are_encoded_in_the_frames_codec(h, frames, name, codec_id, make_values, tolerance):
    """Overwrites chunk 1 and appends a chunk through the mount; python-blosc2 must
    read both as written (within the codec's tolerance), and both must be stored
    in the frame's codec, compressed."""
    path = copy_frame(h, frames, name)
    before = blosc2.open(path, mode="r")
    nchunks, dtype = before.schunk.nchunks, before.dtype
    chunk_bytes = len(before.schunk.decompress_chunk(0))
    del before
    new1 = make_values(chunk_bytes // dtype.itemsize, 1).astype(dtype)
    new_last = make_values(chunk_bytes // dtype.itemsize, 2).astype(dtype)
    mnt = h.mount(path)
    try:
        check_equal(write_errno(os.path.join(mnt, "chunks", "00000001"), [new1.tobytes()]), ("ok", 0),
                    f"{name}: overwriting chunk 1")
        check_equal(write_errno(os.path.join(mnt, "chunks", "%08d" % nchunks), [new_last.tobytes()]), ("ok", 0),
                    f"{name}: appending chunk {nchunks}")
    finally:
        h.unmount(mnt)
    after = blosc2.open(path, mode="r")
    check_equal(after.schunk.nchunks, nchunks + 1, f"{name}: chunks after the append, in python-blosc2")
    for n, want in ((1, new1), (nchunks, new_last)):
        got = np.frombuffer(after.schunk.decompress_chunk(n), dtype=dtype)
        error = np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))
        check(error <= tolerance, f"{name}: chunk {n} reads back in python-blosc2 off by {error} (> {tolerance})")
        header = chunk_header(after.schunk.get_chunk(n))
        check_equal((header["compformat"], header["udcompcode"]), (6, codec_id), f"{name}: chunk {n}'s codec")
        check(header["cbytes"] < header["nbytes"], f"{name}: chunk {n} stored uncompressed: {header}")
    # Our reading of our chunks is python-blosc2's.
    mnt = h.mount(path, ["-o", "ro"])
    try:
        for n in (1, nchunks):
            got = read_file(os.path.join(mnt, "chunks", "%08d" % n))
            check(got == after.schunk.decompress_chunk(n), f"{name}: the mount reads chunk {n} unlike python-blosc2")
    finally:
        h.unmount(mnt)


def smooth(n, seed):
    return np.sin(np.arange(n) / (20.0 + seed)) * 50 + seed


def steps(n, seed):
    """Flat areas, as images have: NDLZ codes them as constant cells."""
    return (np.arange(n) // 512 * (3 + seed)) % 200


def j2k_chunk_writes_are_refused(h, frames):
    path = copy_frame(h, frames, "j2k-u8-grey")
    original = open(path, "rb").read()
    mnt = h.mount(path)
    try:
        stage, err = write_errno(os.path.join(mnt, "chunks", "00000000"), [bytes(range(256)) * 12])
        check_equal(err, errno.EOPNOTSUPP, f"j2k: errno of a chunk write ({stage}; EOPNOTSUPP is {errno.EOPNOTSUPP})")
    finally:
        h.unmount(mnt)
    check(open(path, "rb").read() == original, "j2k: the refused write changed the frame")
    mnt = h.mount(path)
    try:
        check_equal(write_errno(os.path.join(mnt, "attrs", "note"), [b'{"edited": [1, 2]}\n']), ("ok", 0),
                    "j2k: writing attrs/note")
        check_equal(write_errno(os.path.join(mnt, "vlmeta", "raw"), [b"bytes"]), ("ok", 0), "j2k: writing vlmeta/raw")
    finally:
        h.unmount(mnt)
    reread = blosc2.open(path, mode="r")
    check_equal(reread.schunk.vlmeta["note"], {"edited": [1, 2]}, "j2k: attrs edit read by python-blosc2")
    check_equal(reread.schunk.vlmeta.get_vlmeta("raw") if hasattr(reread.schunk.vlmeta, "get_vlmeta") else
                reread.schunk.vlmeta["raw"], b"bytes", "j2k: vlmeta edit read by python-blosc2")


def main():
    h = Harness("plugin codecs: every codec and filter python-blosc2 writes", watchdog_seconds=600)
    h.require_fuse()
    frames = []

    def make():
        frames.extend(generate(h))

    h.test("python-blosc2 and its plugins write every codec and filter", make)
    if frames:
        h.test("each frame reads as python-blosc2 reads it (chunks/, data, array.npy, frame.json, index.tsv)",
               check_frames, h, frames)
        h.test("the j2k-raw frames hold raw codestreams, the others JP2 files", raw_codestreams_are_raw, h, frames)
        h.test("openzl: metadata shows, data reads EIO with a log line naming the plugin",
               openzl_reads_eio_naming_the_plugin, h, frames)
        h.test("zfp_acc: chunk edits are zfp-coded and read back in python-blosc2 within 1e-3",
               edits_are_encoded_in_the_frames_codec, h, frames, "zfp-acc-f4-2d", 33, smooth, 1e-3)
        h.test("zfp_rate: chunk edits read back in python-blosc2",
               edits_are_encoded_in_the_frames_codec, h, frames, "zfp-rate-f8-3d", 35, smooth, 0.5)
        h.test("ndlz: chunk edits are ndlz-coded and read back exactly in python-blosc2",
               edits_are_encoded_in_the_frames_codec, h, frames, "ndlz4-u1", 32, steps, 0)
        h.test("ndlz (8x8 cells): chunk edits read back exactly", edits_are_encoded_in_the_frames_codec, h, frames,
               "ndlz8-u1", 32, steps, 0)
        h.test("j2k: chunk writes fail with EOPNOTSUPP and change nothing; attrs and vlmeta edits work",
               j2k_chunk_writes_are_refused, h, frames)
    h.finish()


if __name__ == "__main__":
    main()
