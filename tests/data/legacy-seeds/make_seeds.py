#!/usr/bin/env python3
"""Makes small frames of the older layouts from ../shared/fixtures-extra, as seeds
for frame_open_fuzz (whose inputs are at most 256 KiB; the fixtures are larger):
each keeps a fixture's header (metalayers included) and trailer, and only its
last chunk, with a fresh one-entry index. Run from the project root:
    python3 tests/data/legacy-seeds/make_seeds.py ../shared/fixtures-extra tests/data/legacy-seeds
"""
import os
import struct
import sys


def one_chunk(frame):
    header_len = struct.unpack(">i", frame[11:15])[0]
    cbytes = struct.unpack(">q", frame[39:47])[0]
    index_at = header_len + cbytes
    index_nbytes = struct.unpack("<i", frame[index_at + 4:index_at + 8])[0]
    entries = [struct.unpack("<q", frame[index_at + 32 + 8 * i:index_at + 40 + 8 * i])[0]
               for i in range(index_nbytes // 8)] if frame[index_at + 2] & 2 else None
    if entries is None:
        raise SystemExit("the index is not memcpyed: cannot take its entries directly")
    last = frame[header_len + entries[-1]:header_len + cbytes]
    nbytes = struct.unpack("<i", last[4:8])[0]
    chunk_cbytes = struct.unpack("<i", last[12:16])[0]
    last = last[:chunk_cbytes]
    # The fixture's own index chunk header, for one entry: nbytes, blocksize 8, cbytes 40.
    index = bytearray(frame[index_at:index_at + 32]) + struct.pack("<q", 0)
    index[4:16] = struct.pack("<iii", 8, 8, 40)
    if frame[0] == 0x9B or frame[0] == 0x9C:
        tail = b""  # beta.1: no trailer
    else:
        trailer_len = struct.unpack(">I", frame[-22:-18])[0]
        tail = frame[-trailer_len:]
    header = bytearray(frame[:header_len])
    out_len = header_len + len(last) + len(index) + len(tail)
    header[16:24] = struct.pack(">Q", out_len)
    header[30:38] = struct.pack(">q", nbytes)
    header[39:47] = struct.pack(">q", len(last))
    header[53:57] = struct.pack(">i", nbytes)  # chunksize: the one chunk
    return bytes(header) + last + bytes(index) + tail


def empty(frame):
    header_len = struct.unpack(">i", frame[11:15])[0]
    header = bytearray(frame[:header_len])
    tail = b"" if frame[0] in (0x9B, 0x9C) else frame[-struct.unpack(">I", frame[-22:-18])[0]:]
    header[16:24] = struct.pack(">Q", header_len + len(tail))
    header[30:38] = struct.pack(">q", 0)
    header[39:47] = struct.pack(">q", 0)
    header[53:57] = struct.pack(">i", 0)
    return bytes(header) + tail


def main():
    src, dst = sys.argv[1], sys.argv[2]
    names = {
        "v2.0.0-beta.1-lz4-shuffle-f4.b2frame": "beta1-lz4",
        "v2.0.0-beta.1-zstd-bitshuffle-f8-meta.b2frame": "beta1-meta-bitshuffle",
        "v2.0.0-beta.2-zstd-bitshuffle-f8-meta-usermeta.b2frame": "beta2-usermeta-bitshuffle",
        "v2.0.0.beta.5-lz4hc-shuffle-i8-usermeta.b2frame": "beta5-usermeta",
        "python-caterva-example.cat": "caterva-type",
    }
    for name, stem in names.items():
        with open(os.path.join(src, "frames", name), "rb") as f:
            frame = f.read()
        for kind, make in (("one-chunk", one_chunk), ("empty", empty)):
            with open(os.path.join(dst, f"{stem}-{kind}.b2frame"), "wb") as f:
                f.write(make(frame))


if __name__ == "__main__":
    main()
